#!/usr/bin/env bash
# Make this checkout small enough to travel to a lent accelerator, and put it back afterwards.
#
# The device tool sends the checkout's tracked and untracked-not-ignored files plus the paths a call
# carries, at most 64 MiB in all; the committed evaluation records, run states and checkpoints
# (results/, models/soter/checkpoints/) are over 200 MB, so no call would start. `slim` takes them out
# of git's index only (every file stays on disk, nothing is committed) and ignores them, keeping the
# faithful checkpoint that the CUDA tests load; `restore` puts the index back to HEAD. While slim, a
# pre-commit hook refuses commits, so the index's deletions can never be committed by mistake.
#
#   bash benchmarks/device_tree.sh slim       # then `size`, then the device calls
#   bash benchmarks/device_tree.sh size       # bytes that would travel (with .gpu/, the folder calls carry)
#   bash benchmarks/device_tree.sh restore    # right after the last device call
#
# docs/soter-training.md, "A GPU session, step by step".
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
GIT_DIR=$(git rev-parse --git-dir)
EXCLUDE=$GIT_DIR/info/exclude
HOOK=$GIT_DIR/hooks/pre-commit
MARK="# device_tree.sh slim: remove with bash benchmarks/device_tree.sh restore"
PATTERNS=("/results/" "/models/soter/checkpoints/")
KEEP=models/soter/checkpoints/soter-cpu-64  # the faithful checkpoint: tests/test_device.py loads it on CUDA
LIMIT=$((64 * 1024 * 1024))

is_slim() { [ -f "$EXCLUDE" ] && grep -qxF "$MARK" "$EXCLUDE"; }

travelling_bytes() {  # a tracked file deleted on disk does not travel: du skips it
    { git ls-files -z --cached --others --exclude-standard; if [ -d .gpu ]; then find .gpu -type f -print0; fi; } \
        | { du -cb --apparent-size --files0-from=- 2>/dev/null || true; } | tail -1 | cut -f1
}

case "${1:-}" in
    slim)
        if is_slim; then echo "device_tree.sh: already slim" >&2; exit 2; fi
        if ! git diff --cached --quiet; then
            echo "device_tree.sh: the index has staged changes: commit or unstage them first" >&2; exit 2
        fi
        if [ -e "$HOOK" ]; then echo "device_tree.sh: $HOOK exists; not replacing it" >&2; exit 2; fi
        mkdir -p "$GIT_DIR/info" "$GIT_DIR/hooks"
        { echo "$MARK"; printf '%s\n' "${PATTERNS[@]}"; } >> "$EXCLUDE"
        git rm -r -q --cached -- results models/soter/checkpoints
        git add -f -- "$KEEP"
        printf '#!/bin/sh\necho "device_tree.sh: the checkout is slim for the device (results/ and checkpoints out of the index); run bash benchmarks/device_tree.sh restore first" >&2\nexit 1\n' > "$HOOK"
        chmod +x "$HOOK"
        echo "slim: $(travelling_bytes) bytes would travel (limit $LIMIT)"
        ;;
    restore)
        if ! is_slim; then echo "device_tree.sh: not slim; nothing to restore" >&2; exit 2; fi
        git reset -q -- results models/soter/checkpoints
        grep -vxF -e "$MARK" "${PATTERNS[@]/#/-e}" "$EXCLUDE" > "$EXCLUDE.tmp" || true
        mv "$EXCLUDE.tmp" "$EXCLUDE"
        rm -f "$HOOK"
        if ! git diff --cached --quiet; then echo "device_tree.sh: the index still differs from HEAD" >&2; exit 1; fi
        echo "restored: the index is HEAD's again"
        ;;
    size)
        bytes=$(travelling_bytes)
        echo "$bytes bytes would travel (limit $LIMIT)$(is_slim && echo ', slim' || true)"
        [ "$bytes" -le "$LIMIT" ] || { echo "device_tree.sh: over the device tool's 64 MiB" >&2; exit 1; }
        ;;
    *)
        echo "usage: bash benchmarks/device_tree.sh slim|size|restore" >&2; exit 2
        ;;
esac
