"""User dataset folders: the documented format loads, round trips exactly, and every bad input is a
DatasetError naming the file and the problem (column and data row where one applies)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from protocols.data import Dataset, DatasetError, Recording
from protocols.datasets import load_dataset
from protocols.datasets.folder import load_folder_dataset, write_folder_dataset
from tests.conftest import make_dataset

DOCS = Path(__file__).resolve().parents[1] / "docs" / "datasets.md"


def test_the_documented_example_loads(tmp_path):
    """The TOML and CSV blocks of docs/datasets.md, written out verbatim, form a loadable dataset."""
    text = DOCS.read_text(encoding="utf-8")
    toml_block = re.search(r"```toml\n(.*?)```", text, re.S).group(1)
    csv_block = re.search(r"```csv\n(.*?)```", text, re.S).group(1)
    (tmp_path / "dataset.toml").write_text(toml_block)
    for name in ("p01_morning.csv", "p01_evening.csv"):
        (tmp_path / name).write_text(csv_block)
    pd.read_csv(tmp_path / "p01_morning.csv").to_parquet(tmp_path / "p02.parquet", index=False)
    ds = load_dataset(str(tmp_path))
    assert ds.name == "my-study" and ds.channels == ("ecg", "ppg", "eda") and ds.sampling_rate == 64.0
    assert ds.subjects == ("p01", "p02") and [r.name for r in ds.recordings] == ["p01-am", "p01_evening", "p02"]
    assert ds.label_names == ("rest", "task") and ds.description == "free text"
    first = ds.recordings[0]
    np.testing.assert_array_equal(first.values[:, 0], [0.12, 0.51, 2.31])
    np.testing.assert_array_equal(first.timestamps[:2], [0.0, 0.015625])
    assert first.labels.tolist()[:2] == [0, 0]
    for rec in ds.recordings[1:]:
        np.testing.assert_array_equal(rec.values, first.values)


def _awkward() -> Dataset:
    """Values that a lossy float format would change, NaN gaps, unlabelled samples, irregular times."""
    rng = np.random.default_rng(3)
    recs = []
    for s in range(2):
        t = np.cumsum(rng.uniform(0.001, 0.1, 50)) + 1e9 * s
        v = rng.standard_normal((2, 50)) * 10.0 ** rng.integers(-300, 37, (2, 50))  # float32's range ends at 3.4e38
        v[0, :4] = [0.1 + 0.2, 5e-324, -0.0, 1 / 3]
        v[1, 7] = np.nan
        labels = rng.integers(-1, 3, 50)
        recs.append(Recording(f"p{s}", f"p{s} day/1", v, t, labels))
    return Dataset("awkward", ("ecg,lead", "é"), tuple(recs), None, ("a", "NA", "1"), "x")


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("make", [_awkward, lambda: make_dataset(n_subjects=2, n_samples=50)])
def test_write_then_load_gives_back_the_same_arrays(tmp_path, fmt, make):
    ds = make()
    manifest = write_folder_dataset(ds, tmp_path / fmt, format=fmt)
    assert manifest.name == "dataset.json"
    back = load_folder_dataset(tmp_path / fmt)
    assert (back.name, back.channels, back.label_names, back.sampling_rate, back.subjects) == \
        (ds.name, ds.channels, ds.label_names, ds.sampling_rate, ds.subjects)
    for a, b in zip(ds.recordings, back.recordings, strict=True):
        assert (a.subject, a.name) == (b.subject, b.name)
        np.testing.assert_array_equal(a.values, b.values)  # bit-exact, NaN in place
        assert np.array_equal(np.signbit(a.values), np.signbit(b.values))
        np.testing.assert_array_equal(a.timestamps, b.timestamps)
        np.testing.assert_array_equal(a.labels, b.labels)


def test_json_manifest_and_ignored_extra_columns(tmp_path):
    (tmp_path / "a.csv").write_text("time,x,comment\n0,1,hello\n1,2,\n")
    (tmp_path / "dataset.json").write_text(json.dumps(
        {"name": "j", "channels": ["x"], "recordings": [{"file": "a.csv", "subject": "s"}]}))
    ds = load_folder_dataset(tmp_path)
    assert ds.recordings[0].values.tolist() == [[1.0, 2.0]] and ds.recordings[0].labels is None


def test_allow_missing_keeps_gaps_as_nan(tmp_path):
    folder = _folder(tmp_path, {"a.csv": "time,ecg,ppg,label\n0,1,,calm\n0.5,NaN,2,\n"}, "allow_missing = true\n")
    rec = load_folder_dataset(folder).recordings[0]
    assert np.isnan(rec.values[1, 0]) and np.isnan(rec.values[0, 1]) and rec.labels.tolist() == [0, -1]


# -- errors -------------------------------------------------------------------------------------------
GOOD = "time,ecg,ppg,label\n0.0,1.0,2.0,calm\n0.5,1.5,2.5,calm\n1.0,1.0,3.0,busy\n"
HEAD = 'name = "mine"\nchannels = ["ecg", "ppg"]\nsampling_rate = 2.0\nlabels = ["calm", "busy"]\n'


def _folder(path: Path, files: dict[str, str | bytes], extra: str = "", head: str = HEAD) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    entries = ""
    for i, (name, content) in enumerate(files.items()):
        if isinstance(content, bytes):
            (path / name).write_bytes(content)
        else:
            (path / name).write_text(content)
        entries += f'\n[[recordings]]\nfile = "{name}"\nsubject = "P{i}"\n'
    (path / "dataset.toml").write_text(head + extra + entries)
    return path


def _error(path: Path) -> str:
    with pytest.raises(DatasetError) as err:
        load_folder_dataset(path)
    return str(err.value)


@pytest.mark.parametrize("content, message", [
    ("time,ecg\n0,1\n", "a.csv: missing column 'ppg'"),
    ("ecg,ppg,label\n1,1,calm\n", "a.csv: missing column 'time'"),
    ("time,ecg,ppg,label\n0,1,x,calm\n", "a.csv: non-numeric value 'x' in column 'ppg' at data row 1"),
    ("time,ecg,ppg,label\n0,1,1,calm\nnoon,1,1,calm\n", "a.csv: non-numeric value 'noon' in column 'time' at data row 2"),
    ("time,ecg,ppg,label\n0,1,,calm\n", "a.csv: missing value in column 'ppg' at data row 1"),
    ("time,ecg,ppg,label\n0,1,1,calm\n1,NaN,1,calm\n", "a.csv: missing value in column 'ecg' at data row 2"),
    ("time,ecg,ppg,label\n0,1,inf,calm\n", "a.csv: infinite value in column 'ppg' at data row 1"),
    ("time,ecg,ppg,label\n0,1,1,calm\ninf,1,1,calm\n", "a.csv: empty or infinite 'time' at data row 2"),
    ("time,ecg,ppg,label\n0,1,1,calm\n,1,1,calm\n", "a.csv: empty or infinite 'time' at data row 2"),
    ("time,ecg,ppg,label\n1,1,1,calm\n0,1,1,calm\n", "a.csv: 'time' is not strictly increasing at data row 2"),
    ("time,ecg,ppg,label\n0,1,1,calm\n1,1,1,calm\n1,1,1,calm\n", "not strictly increasing at data row 3"),
    ("time,ecg,ppg,label\n0,1,1,asleep\n", "a.csv: label 'asleep' at data row 1"),
    ("time,ecg,ppg\n0,1,1\n", "a.csv: the manifest names labels but the file has no 'label' column"),
    ("time,ecg,ppg,label\n", "a.csv: no rows"),
    ("time,ecg,ppg,label\n0,1,1,calm\n1,1,1,calm\n2,1", "a.csv: line 4 has 2 of 4 fields (truncated"),
    (b"", "a.csv: cannot be read"),
    (b"\xff\xfe\x00garbage\x00\x01", "a.csv: cannot be read (UnicodeDecodeError"),
])
def test_bad_file_contents_name_file_column_and_row(tmp_path, content, message):
    assert message in _error(_folder(tmp_path / "d", {"a.csv": content}))


def test_truncated_parquet_cannot_be_read(tmp_path):
    write_folder_dataset(make_dataset(n_subjects=2, n_samples=20), tmp_path, format="parquet")
    victim = sorted(tmp_path.glob("*.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    assert f"{victim.name}: cannot be read" in _error(tmp_path)


def test_parquet_dates_are_not_seconds(tmp_path):
    frame = pd.DataFrame({"time": pd.date_range("2024-01-01", periods=3, freq="s"), "ecg": 1.0, "ppg": 2.0,
                          "label": "calm"})
    frame.to_parquet(tmp_path / "a.parquet")
    _folder(tmp_path, {})
    (tmp_path / "dataset.toml").write_text(HEAD + '[[recordings]]\nfile = "a.parquet"\nsubject = "s"\n')
    assert "a.parquet: column 'time' holds dates" in _error(tmp_path)


@pytest.mark.parametrize("head, extra, message", [
    (HEAD, "colour = 1\n", "unknown field(s) ['colour']"),
    ('channels = ["ecg", "ppg"]\n', "", "missing required field 'name'"),
    ('name = "x"\n', "", "missing required field 'channels'"),
    ('name = ""\nchannels = ["ecg"]\n', "", "'name' must be a non-empty string"),
    ('name = "x"\nchannels = "ecg"\n', "", "'channels' must be a non-empty list"),
    ('name = "x"\nchannels = ["ecg", "ecg"]\n', "", "lists a column twice"),
    ('name = "x"\nchannels = ["time"]\n', "", "reserved column names"),
    (HEAD, "allow_missing = 1\n", "'allow_missing' must be true or false"),
    ('name = "x"\nchannels = ["ecg", "ppg"]\nsampling_rate = -64\n', "", "'sampling_rate' must be a positive"),
    ('name = "x"\nchannels = ["ecg", "ppg"]\nlabels = ["a", "a"]\n', "", "'labels' must be a list of distinct"),
    (HEAD, "description = 3\n", "'description' must be a string"),
])
def test_bad_manifest_fields(tmp_path, head, extra, message):
    err = _error(_folder(tmp_path / "d", {"a.csv": GOOD}, extra, head))
    assert "dataset.toml" in err and message in err


@pytest.mark.parametrize("manifest, message", [
    (HEAD, "missing required field 'recordings'"),
    (HEAD + "recordings = []\n", "'recordings' must list at least one recording"),
    (HEAD + '[[recordings]]\nfile = "a.csv"\n', "recordings[0] needs a non-empty string 'subject'"),
    (HEAD + '[[recordings]]\nsubject = "s"\n', "recordings[0] needs a non-empty string 'file'"),
    (HEAD + '[[recordings]]\nfile = "a.csv"\nsubject = "s"\nrate = 3\n', "recordings[0] has unknown field(s) ['rate']"),
    (HEAD + '[[recordings]]\nfile = "a.csv"\nsubject = "s"\n[[recordings]]\nfile = "sub/a.csv"\nsubject = "t"\n',
     "recordings[0] and recordings[1] are both named 'a'"),
    (HEAD + '[[recordings]]\nfile = "gone.csv"\nsubject = "s"\n', "gone.csv: listed in the manifest but missing"),
    (HEAD + '[[recordings]]\nfile = "a.txt"\nsubject = "s"\n', "a.txt: unsupported file type '.txt'"),
])
def test_bad_recording_lists(tmp_path, manifest, message):
    (tmp_path / "a.csv").write_text(GOOD)
    (tmp_path / "a.txt").write_text(GOOD)
    (tmp_path / "dataset.toml").write_text(manifest)
    assert message in _error(tmp_path)


@pytest.mark.parametrize("file", ["../x.csv", "ABSOLUTE", "link.csv", "linked/x.csv"])
def test_a_file_outside_the_folder_is_refused_without_quoting_it(tmp_path, file):
    """``..``, an absolute path or a symlink out of the folder: refused by entry, nothing of the file is read."""
    (tmp_path / "x.csv").write_text("time,ecg,ppg,label\n0,1,secret-cell,calm\n")  # outside the dataset folder
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "link.csv").symlink_to(tmp_path / "x.csv")
    (folder / "linked").symlink_to(tmp_path, target_is_directory=True)
    file = file.replace("ABSOLUTE", str(tmp_path / "x.csv"))
    (folder / "dataset.toml").write_text(HEAD + f'[[recordings]]\nfile = "{file}"\nsubject = "s"\n')
    err = _error(folder)
    assert f"dataset.toml: recordings[0] file {file!r} resolves to {tmp_path / 'x.csv'}, outside the dataset " \
           f"folder {folder}; refused" in err
    assert "secret" not in err


def test_nested_files_and_links_inside_the_folder_load(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.csv").write_text(GOOD)
    (tmp_path / "b.csv").symlink_to(tmp_path / "sub" / "a.csv")
    (tmp_path / "dataset.toml").write_text(HEAD + '[[recordings]]\nfile = "sub/a.csv"\nsubject = "s"\n'
                                                  '[[recordings]]\nfile = "sub/../b.csv"\nsubject = "t"\n')
    ds = load_folder_dataset(tmp_path)
    assert [r.name for r in ds.recordings] == ["a", "b"]
    np.testing.assert_array_equal(ds.recordings[0].values, [[1.0, 1.5, 1.0], [2.0, 2.5, 3.0]])


def test_folder_and_manifest_level_errors(tmp_path):
    assert "does not exist" in _error(tmp_path / "missing")
    (tmp_path / "file.csv").write_text(GOOD)
    assert "is not a folder" in _error(tmp_path / "file.csv")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no manifest (dataset.toml or dataset.json)" in _error(empty)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "dataset.toml").write_text("name = [unclosed")
    assert "dataset.toml: malformed manifest" in _error(bad)
    (bad / "dataset.toml").unlink()
    (bad / "dataset.json").write_text('{"name": "x",')
    assert "dataset.json: malformed manifest" in _error(bad)
    (bad / "dataset.json").write_text('["name"]')
    assert "dataset.json: the manifest must be a table" in _error(bad)
    (bad / "dataset.toml").write_text('name = "x"\n')
    assert "keep one manifest" in _error(bad)
    with pytest.raises(DatasetError, match="take no options"):
        load_folder_dataset(_folder(tmp_path / "ok", {"a.csv": GOOD}), allow_missing=True)


def test_writer_refuses_what_the_format_cannot_hold(tmp_path):
    ds = make_dataset(n_subjects=1, n_samples=5, channels=("time", "b"))
    with pytest.raises(DatasetError, match="reserved"):
        write_folder_dataset(ds, tmp_path)
    with pytest.raises(ValueError, match="format"):
        write_folder_dataset(make_dataset(n_subjects=1, n_samples=5), tmp_path, format="xlsx")
