"""`data stats`: the paper's dataset table for what is present, the embedded cohort and user folders."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
import pytest

from harness.commands import data as data_cli
from protocols.data import DatasetError
from protocols.datasets import load_dataset
from protocols.npe import dataset_npe
from tests.conftest import make_dataset

WFDB = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "wfdb"
needs_wfdb = pytest.mark.skipif(not (WFDB / "100.hea").is_file(),
                                reason=f"real WFDB records not found at {WFDB} (../shared/data/wfdb beside the checkout)")


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    data_cli.add_parser(parser.add_subparsers(dest="command"))
    return data_cli.run(parser.parse_args(["data", *argv]))


def _rows(out: str) -> dict[str, list[str]]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Dataset"))
    return {line.split()[0]: line.split()[1:] for line in lines[start + 1:] if not line.startswith(("NPE:", "Paper:"))}


@pytest.fixture()
def small_cohort(monkeypatch):
    """The embedded cohort stand-in: generating the real one takes ~35 s."""
    import protocols.datasets.synthetic as synthetic

    ds = make_dataset(n_subjects=3, n_samples=300, channels=("ECG", "PPG", "RSP", "EDA"), name="synthetic-cohort")
    monkeypatch.setattr(synthetic, "load_synthetic_cohort", lambda **options: ds)
    return ds


@needs_wfdb
def test_stats_on_record_100_prints_two_channels_and_its_npe(capsys):
    import wfdb

    assert _cli("stats", "--dataset", "mitbih", "--data-root", str(WFDB)) == 0
    out = capsys.readouterr().out
    expected = dataset_npe([wfdb.rdrecord(str(WFDB / "100")).p_signal.T])
    assert _rows(out)["mitbih"] == ["MC", "2", f"{expected:.3f}", "1", "1", "2", "0.878"]  # the paper's beside ours
    assert "order 4, delay 1" in out and "Paper: the paper's dataset statistics (tab:eval-stats" in out


@needs_wfdb
def test_stats_finds_records_held_by_the_data_root_itself(tmp_path, capsys):
    """A folder holding record 100 alone: found without naming the dataset, as `run` finds it."""
    import shutil

    for suffix in (".hea", ".dat"):
        shutil.copy(WFDB / f"100{suffix}", tmp_path / f"100{suffix}")
    assert _cli("stats", "--data-root", str(tmp_path)) == 0
    assert _rows(capsys.readouterr().out)["mitbih"][:2] == ["MC", "2"]


def _user_folder(path: Path) -> Path:
    path.mkdir()
    (path / "dataset.toml").write_text('name = "my-study"\nchannels = ["a"]\n'
                                       '[[recordings]]\nfile = "p1.csv"\nsubject = "p1"\n')
    t = np.arange(200) / 10
    (path / "p1.csv").write_text("time,a\n" + "".join(f"{x},{x * x}\n" for x in t))  # monotone: NPE 0
    return path


def test_stats_lists_the_cohort_every_present_dataset_and_user_folders(tmp_path, small_cohort, capsys):
    root = tmp_path / "data"
    (root / "heartrate").mkdir(parents=True)
    series = np.arange(40.0).reshape(2, 20)
    (root / "heartrate" / "BIDMC32HR_TRAIN.ts").write_text(
        "@problemName BIDMC32HR\n@targetlabel true\n@data\n"
        + "".join(",".join(map(str, s)) + ":70\n" for s in series) + "10,9,8,7,6,5:60\n")
    (root / "wdd").mkdir()  # present but empty: skipped with the reason
    assert _cli("stats", "--data-root", str(root)) == 0
    captured = capsys.readouterr()
    rows = _rows(captured.out)
    assert list(rows) == ["synthetic-cohort", "heartrate"]
    cohort_npe = dataset_npe([r.values for r in small_cohort.recordings])
    assert rows["synthetic-cohort"] == ["MC", "4", f"{cohort_npe:.3f}", "3", "3", "-", "-"]  # not in the paper
    assert rows["heartrate"] == ["SC", "1", "0.000", "1", "3", "1", "0.469"]  # monotone segments; the paper's
    assert "skipped wdd: wdd: no STRESS, AEROBIC or ANAEROBIC folder" in captured.err
    user = _user_folder(tmp_path / "mine")
    assert _cli("stats", "--dataset", str(user), "synthetic-cohort", "--npe-order", "3") == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    assert rows["my-study"] == ["SC", "1", "0.000", "1", "1", "-", "-"] and "order 3, delay 1" in out
    assert rows["synthetic-cohort"][2] == f"{dataset_npe([r.values for r in small_cohort.recordings], 3):.3f}"


def test_stats_without_a_data_root_shows_the_cohort_only(small_cohort, capsys, monkeypatch):
    monkeypatch.delenv("SOTER_BENCH_DATA", raising=False)
    assert _cli("stats") == 0
    assert list(_rows(capsys.readouterr().out)) == ["synthetic-cohort"]


def test_a_named_dataset_that_fails_is_an_error(tmp_path, small_cohort):
    with pytest.raises(DatasetError, match="mmash: folder .* does not exist"):
        _cli("stats", "--dataset", "mmash", "--data-root", str(tmp_path))


def test_data_root_from_the_environment(tmp_path, small_cohort, capsys, monkeypatch):
    (tmp_path / "ieee-ppg").mkdir()
    from scipy.io import savemat

    savemat(tmp_path / "ieee-ppg" / "DATA_01_TYPE01.mat", {"sig": np.random.default_rng(0).normal(size=(6, 50))})
    monkeypatch.setenv("SOTER_BENCH_DATA", str(tmp_path))
    assert _cli("stats") == 0
    assert _rows(capsys.readouterr().out)["ieee-ppg"][:2] == ["MC", "5"]


# -- `data check` without SHA256SUMS.txt: WFDB records against their headers' lengths and checksums ---------
def _copy_record(record: str, folder: Path) -> Path:
    """A writable copy of a shared record (header and every signal file): tests corrupt copies only."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    for file in WFDB.glob(f"{record}.*"):
        shutil.copy(file, folder / file.name)
        (folder / file.name).chmod(0o644)
    return folder / record


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


@needs_wfdb
def test_check_finds_a_flipped_byte_by_the_header_checksum(tmp_path, capsys):
    base = _copy_record("100", tmp_path / "mitbih")
    assert not (tmp_path / "mitbih" / "SHA256SUMS.txt").exists()
    assert _cli("check", "mitbih", "--root", str(tmp_path)) == 0  # the intact copy passes
    assert "present: 1" in capsys.readouterr().out
    _flip(base.with_suffix(".dat"), 3000)  # format 212: byte 3k is the low byte of sample 2k, signal 0
    assert _cli("check", "mitbih", "--root", str(tmp_path)) == 1
    out = capsys.readouterr().out
    assert "corrupt: 1  100" in out and "checked against WFDB header lengths and checksums, then" in out
    assert f"100: {base}: checksum mismatch: signal 0 (MLII) in 100.dat: header checksum -22131" in out


@needs_wfdb
def test_check_and_the_loader_name_a_truncated_signal_file(tmp_path, capsys):
    dat = _copy_record("100", tmp_path / "mitbih").with_suffix(".dat")
    dat.write_bytes(dat.read_bytes()[:975_001])
    assert _cli("check", "mitbih", "--root", str(tmp_path)) == 1
    out = capsys.readouterr().out
    assert f"100: {dat}: truncated: expected 1950000 bytes, found 975001" in out and "broadcast" not in out
    with pytest.raises(DatasetError, match=r"100.dat: truncated: expected 1950000 bytes, found 975001 \(header"):
        load_dataset("mitbih", data_root=tmp_path)


@needs_wfdb
@pytest.mark.parametrize("record, signal_file, offset, signal", [
    ("100", "100.dat", 3002, "signal 1 (V5)"),  # format 212, two signals
    ("a103l", "a103l.mat", 24 + 6 * 1000 + 2, "signal 1 (V)"),  # format 16 after a 24-byte offset, 3 signals
    ("s0010_re", "s0010_re.xyz", 6 * 1000 + 4, "signal 14 (vz)"),  # second signal file (signals 12-14)
    ("03700181", "03700181.dat", 9 * 1000 + 7, "signal 1 (ABP)"),  # 4 samples per frame of signal 0, a skew
])
def test_every_record_layout_is_held_to_its_header(tmp_path, record, signal_file, offset, signal):
    from protocols.datasets.check import check_wfdb_record

    base = _copy_record(record, tmp_path)
    check_wfdb_record(base)  # intact
    path = tmp_path / signal_file
    intact = path.read_bytes()
    _flip(path, offset)
    with pytest.raises(DatasetError, match=rf"{record}: checksum mismatch: {re.escape(signal)} in {signal_file}"):
        check_wfdb_record(base)
    path.write_bytes(intact[:-1])
    with pytest.raises(DatasetError, match=rf"{signal_file}: truncated: expected {len(intact)} bytes, "
                                           rf"found {len(intact) - 1}"):
        check_wfdb_record(base)
    path.write_bytes(intact + b"\0" * 4)
    with pytest.raises(DatasetError, match=rf"{signal_file}: longer than its header says"):
        check_wfdb_record(base)


# -- the paper's values beside ours ----------------------------------------------------------------------------
def test_paper_values_are_the_transcribed_table_for_each_paper_dataset():
    """Read once from results/paper/eval-stats.csv (the paper's tab:eval-stats), keyed by our dataset names."""
    assert data_cli._paper_statistics() == {
        "heartrate": ("1", "0.469"), "mitbih": ("2", "0.878"), "scientisst-move": ("5", "0.643"),
        "ieee-ppg": ("5", "0.646"), "mmash": ("6", "0.334"), "wdd": ("7", "0.618")}


def test_without_the_transcribed_paper_tables_ours_are_shown_alone(small_cohort, capsys, monkeypatch):
    from harness.reporting import paper

    def missing(*args, **kwargs):
        raise FileNotFoundError("results/paper/tables.json")

    monkeypatch.setattr(paper, "load", missing)
    assert _cli("stats", "--dataset", "synthetic-cohort") == 0
    captured = capsys.readouterr()
    assert _rows(captured.out)["synthetic-cohort"][-2:] == ["-", "-"] and "\nPaper:" not in captured.out
    assert "paper values not shown: no transcribed paper table (results/paper/tables.json)" in captured.err


SAMPLES = WFDB.parent / "paper-samples"


@pytest.mark.skipif(not (SAMPLES / "ieee-ppg").is_dir() or not (SAMPLES / "mitbih" / "105.hea").is_file(),
                    reason=f"staged real files not found at {SAMPLES} (../shared/data/paper-samples)")
def test_stats_on_the_staged_real_files_put_the_papers_values_beside_ours(capsys):
    """Every paper dataset under the staged root is read (IEEE whole, with its extra and truth files)."""
    assert _cli("stats", "--data-root", str(SAMPLES)) == 0
    rows = _rows(capsys.readouterr().out)
    for name, paper in (("heartrate", ["1", "0.469"]), ("mitbih", ["2", "0.878"]), ("ieee-ppg", ["5", "0.646"])):
        ds = load_dataset(name, data_root=SAMPLES)
        ours = dataset_npe([r.values for r in ds.recordings])
        assert rows[name] == [rows[name][0], paper[0], f"{ours:.3f}", str(len(ds.subjects)),
                              str(len(ds.recordings)), *paper], name
    assert rows["ieee-ppg"][3:5] == ["4", "4"] and rows["heartrate"][:2] == ["SC", "1"]
