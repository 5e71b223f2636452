#!/usr/bin/env bash
# Pack what a device call needs beyond the tree into .gpu/ (ignored; carried with carry [".gpu"]): the training
# corpora as .gpu/corpus.tar.xz and the project's installed metadata as .gpu/site/ (its entry points).
# The device cannot read ../shared or build a corpus (no wfdb, no neurokit2 there), and the carried folder
# counts towards the 64 MiB that a call may send, so the corpora travel compressed and are unpacked there.
#
#   bash benchmarks/gpu_bundle.sh CORPUS [VALCORPUS]     # CORPUS: a `build-corpus` folder (docs/soter-training.md)
#
# benchmarks/gpu_session.sh unpacks it to $WORK/data/{corpus,valcorpus}.
set -euo pipefail
[ $# -ge 1 ] && [ -d "$1" ] || { echo "usage: bash benchmarks/gpu_bundle.sh CORPUS [VALCORPUS]" >&2; exit 2; }
cd "$(git rev-parse --show-toplevel)"
compgen -G "$1/*/index.json" > /dev/null || { echo "gpu_bundle.sh: $1 is not a corpus folder (no DATASET/index.json)" >&2; exit 2; }
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
ln -s "$(cd "$1" && pwd)" "$STAGE/corpus"
if [ $# -ge 2 ]; then
    [ -d "$2" ] || { echo "gpu_bundle.sh: $2 is not a folder" >&2; exit 2; }
    ln -s "$(cd "$2" && pwd)" "$STAGE/valcorpus"
fi
mkdir -p .gpu
tar -C "$STAGE" -chf - $(cd "$STAGE" && ls) | nice -n 10 xz -T0 -6 > .gpu/corpus.tar.xz
echo ".gpu/corpus.tar.xz: $(du -b .gpu/corpus.tar.xz | cut -f1) bytes"
# the project's installed metadata alone (its entry points register the built-in models; the code travels as
# the tree itself): the .dist-info folder of a wheel built here
rm -rf .gpu/site && mkdir -p .gpu/site
python -m pip wheel -q --no-deps --no-build-isolation -w "$STAGE/wheel" . > /dev/null
python -m zipfile -e "$STAGE"/wheel/soter_bench-*.whl "$STAGE/unpacked"
cp -r "$STAGE"/unpacked/soter_bench-*.dist-info .gpu/site/
ls -l .gpu
