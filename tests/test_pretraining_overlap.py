"""The pre-training overlap registry (issue #35): the data file's schema, an entry for every registered
model, SOTER's entries generated from their checkpoints' corpus manifests, and the marks with their
reasons in every table format, the leaderboard column and `harness list models`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness.reporting.pretraining_marks import leaderboard_column, mark_table, read_declared_sources, record_declared_sources
from harness.reporting.tables import Column, Entry, Table, render
from models import pretraining
from models.pretraining import (CHECKPOINTS, REGISTRY_FILE, STATUSES, RegistryError, checkpoint_entry, overlap,
                                read_registry, registry)
from models.registry import all_specs
from models.soter.corpus_manifest import MANIFEST, classify, read_manifest, sources
from protocols.datasets import all_datasets

TRAINING = {"steps": 1, "tokens_seen": 1, "train_config": {"corpus": "/c"}}


# -- the data file ------------------------------------------------------------------------------
def _builtin_models() -> list[str]:
    """This project's models (tests register plugins of their own, which need no entry)."""
    return [n for n, spec in all_specs().items() if spec.factory.split(".")[0] in ("models", "baselines")]


def test_every_registered_model_has_an_entry_with_a_source_or_unknown():
    reg = registry()
    for name in _builtin_models():
        entry = pretraining.model_entry(name)  # an adapted entry (NAME@MODE) carries its base's
        assert entry is not None, f"{name} has no entry in {REGISTRY_FILE.name}"
        assert entry.cite.strip() and entry.checked.strip(), name
        for dataset in reg.datasets:
            o = overlap(entry, dataset, reg=reg)
            assert o.status in STATUSES and o.reason, (name, dataset)
            # a status other than unknown needs a corpus the entry documents (or no pre-training at all)
            if o.status != "unknown":
                assert not entry.pretrained or entry.corpus or entry.datasets, (name, dataset)


def test_every_evaluation_dataset_is_described_and_entries_name_only_registered_models():
    reg = registry()
    assert set(reg.datasets) == set(all_datasets())
    known = set(_builtin_models())
    assert len(known) >= 40
    for entry in reg.entries.values():
        assert set(entry.models) <= known, f"{entry.key}: {set(entry.models) - known} are not registered models"


def test_the_data_file_parses_strictly(tmp_path):
    good = REGISTRY_FILE.read_text()
    cases = [
        (good.replace('checked = "2026-11-25"', 'checked = "yesterday"', 1), "checked must be a date"),
        (good.replace('complete = false\nunknown_because', 'complete = false\nunknownbecause', 1),
         "unknown field(s) ['unknownbecause']"),
        (good + '\n[entries.again]\nmodels = ["drift"]\npretrained = false\ndata = "x"\ncite = "y"\n'
                'checked = "2026-11-25"\n', "model 'drift' is in entries naive and again"),
        (good + '\n[entries.vague]\nmodels = ["x"]\ndata = "x"\ncite = "y"\nchecked = "2026-11-25"\n',
         "needs unknown_because"),
        (good.replace("schema = 1", "schema = 2"), "expected schema = 1"),
    ]
    for text, message in cases:
        path = tmp_path / "r.toml"
        path.write_text(text)
        with pytest.raises(RegistryError, match=message.replace("(", r"\(").replace(")", r"\)")
                           .replace("[", r"\[").replace("]", r"\]")):
            read_registry(path, CHECKPOINTS)


# -- SOTER: generated from the checkpoints' manifests ---------------------------------------------
def test_every_shipped_checkpoint_gets_a_generated_entry_from_its_manifest():
    folders = sorted(d for d in CHECKPOINTS.iterdir() if (d / "TRAINING.json").is_file())
    assert folders and set(registry().checkpoints) == {d.name for d in folders}
    shipped = registry().checkpoints["soter-cpu-64"]
    manifest = read_manifest(CHECKPOINTS / "soter-cpu-64")
    training = json.loads((CHECKPOINTS / "soter-cpu-64" / "TRAINING.json").read_text())
    assert manifest["corpus"] == training["train_config"]["corpus"]
    # every corpus dataset of the manifest, and nothing else, is in the generated corpus
    assert set(shipped.corpus) == {s.source for s in sources(manifest)}
    assert {"wfdb-record:a103l", "wfdb-record:s0010_re", "wfdb-record:03700181"} <= set(shipped.corpus)
    assert shipped.complete and shipped.weights
    assert "a103l" in shipped.data and "seeds 1000, 1001, 1002, 1003" in shipped.data
    assert registry().entry_for("soter") is shipped and registry().entry_for("soter-autoregressive") is shipped
    assert overlap(shipped, "mitbih").status == "no"
    assert overlap(shipped, "synthetic-cohort").status == "partial"  # the same simulators, other seeds


def _checkpoint(tmp_path: Path, manifest: dict | None, training: dict = TRAINING) -> Path:
    folder = tmp_path / "ckpt"
    folder.mkdir(parents=True)
    (folder / "TRAINING.json").write_text(json.dumps(training))
    if manifest is not None:
        (folder / MANIFEST).write_text(json.dumps(manifest))
    return folder


def test_a_manifest_with_an_evaluation_record_says_yes_and_names_it(tmp_path):
    folder = _checkpoint(tmp_path, {"corpus": "/c", "written": "2026-01-02", "datasets": [
        {"name": "wfdb-100", "recordings": ["100"]}, {"name": "ptb-xl[12leads@500Hz]", "recordings": ["1"]}]})
    entry = checkpoint_entry(folder)
    o = overlap(entry, "mitbih")
    assert o.status == "yes" and "physionet:mitdb: 100" in o.reason and o.checked == "2026-01-02"
    assert overlap(entry, "mitbih:blocks=6").status == "yes"
    assert overlap(entry, "wdd").status == "no"


def test_a_checkpoint_without_a_manifest_or_with_an_unknown_source_is_unknown(tmp_path):
    bare = checkpoint_entry(_checkpoint(tmp_path / "a", None))
    assert overlap(bare, "mitbih").status == "unknown" and "no CORPUS.json" in overlap(bare, "mitbih").reason
    folder = _checkpoint(tmp_path / "b", {"corpus": "/c", "datasets": [{"name": "my-folder", "recordings": ["r"]}]})
    o = overlap(checkpoint_entry(folder), "mitbih")
    assert o.status == "unknown" and "my-folder" in o.reason
    other = _checkpoint(tmp_path / "c", {"corpus": "/elsewhere", "datasets": []})
    with pytest.raises(RegistryError, match="describes corpus '/elsewhere'"):
        checkpoint_entry(other)


@pytest.mark.parametrize("name, source", [
    ("synthetic-stream-1000[ECG,PPG,RSP,EDA@32Hz,regular]", "soter-bench:simulator"),
    ("mimic3wdb[II,PLETH@125Hz]", "physionet:mimic3wdb"), ("wfdb-203", "physionet:mitdb"),
    ("wfdb-bidmc07", "physionet:bidmc"), ("wfdb-a103l", "wfdb-record:a103l"),
    ("wfdb-mixedsignals@249.89Hz", "wfdb-record:mixedsignals"), ("wesad-chest[ECG@700Hz]", "uni-siegen:wesad"),
    ("sleep-edf[EEG@100Hz]", "physionet:sleep-edfx"), ("somebody-else", "unidentified")])
def test_corpus_datasets_are_placed_by_the_keys_the_readers_write(name, source):
    assert classify(name) == source


def test_the_paper_corpus_may_hold_bidmc_through_mimic_and_excludes_mitbih():
    authors = registry().entry_for("soter-authors")
    assert overlap(authors, "heartrate").status == "partial" and "MIMIC-II" in overlap(authors, "heartrate").reason
    assert overlap(authors, "mitbih").status == "no"
    assert "sec:model_training" in authors.cite


# -- user datasets ------------------------------------------------------------------------------
def test_user_datasets_are_unknown_unless_their_declared_source_matches():
    authors = registry().entry_for("soter-authors")
    assert overlap(authors, "my-data").status == "unknown"
    assert overlap(authors, "my-data", ["physionet:ptb-xl"]).status == "yes"
    assert overlap(authors, "my-data", ["physionet:mitdb"]).status == "no"  # known to the registry, not in the corpus
    o = overlap(authors, "my-data", ["hospital:internal"])
    assert o.status == "unknown" and "not one the registry knows" in o.reason
    assert overlap(registry().entry_for("drift"), "my-data").status == "no"  # nothing pre-trained


def test_the_runner_keeps_declared_sources_for_the_tables(tmp_path):
    record_declared_sources(tmp_path, "mine", ("physionet:ptb-xl",))
    record_declared_sources(tmp_path, "other", ())
    assert read_declared_sources(tmp_path) == {"mine": ("physionet:ptb-xl",)}
    assert read_declared_sources(tmp_path / "absent") == {}


# -- tables, leaderboard, list ------------------------------------------------------------------
def _frame(models: dict[str, str], datasets: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame([{"task": "forecasting", "dataset": d, "model": label, "model_name": name, "model_info": ""}
                         for label, name in models.items() for d in datasets])


def _table(models, datasets) -> Table:
    cols = tuple(Column(d, m) for d in datasets for m in ("RMSE", "MAE"))
    entries = {(m, c): Entry(1.0 + i, 0.1, 4, 4, "ok") for i, m in enumerate(models) for c in cols}
    return Table("caption", cols, tuple(models), entries)


def test_a_yes_cell_shows_the_mark_and_the_reason_in_every_format(monkeypatch):
    fake = pretraining.Entry("fake", ("fake-fm",), "a corpus with MIT-BIH", "Fake paper, Sec. 4", "2026-11-25",
                             corpus=("physionet:mitdb",), complete=True)
    vague = pretraining.Entry("vague", ("vague-fm",), "not named", "Vague card", "2026-11-25",
                              unknown_because="the card names no dataset")
    reg = registry()
    monkeypatch.setattr(pretraining, "registry", lambda: pretraining.Registry(
        {**reg.entries, "fake": fake, "vague": vague}, reg.datasets, reg.checkpoints, reg.sources))
    models = {"fake-fm": "fake-fm", "last-value": "last-value", "vague-fm": "vague-fm"}
    table = mark_table(_table(list(models), ("mitbih",)), _frame(models, ("mitbih",)), "forecasting")
    text, md, tex = (render(table, s) for s in ("text", "markdown", "latex"))
    assert "1.00±0.10‡" in text and "**1.00** ± 0.10‡" in md and r"$\mathbf{1.00}_{\pm 0.10}^{\ddagger}$" in tex
    reason = "fake-fm on mitbih: pre-training overlap yes: its corpus includes physionet:mitdb"
    assert f"‡ {reason}" in text.replace("\n  ", " ") and f"‡ {reason}" in md
    assert r"$^{\ddagger}$ " + reason in tex and "Fake paper, Sec. 4" in md
    # unknown and no are shown as such, in every format
    for out in (text.replace("\n  ", " "), md, tex):
        assert "vague-fm: pre-training overlap unknown on mitbih" in out.replace(r"\_", "_")
        assert "pre-training overlap no: last-value on mitbih (not pre-trained)" in out
    assert "3.00 ± 0.10?" in md  # vague-fm marked ?, last-value unmarked
    # the numbers and ranks are untouched: the best cell stays bold although marked
    assert "**1.00** ± 0.10‡" in md and "<u>2.00</u> ± 0.10 |" in md
    assert [e.mean for e in table.entries.values()] == [e.mean for e in _table(list(models), ("mitbih",)).entries.values()]


def test_marks_follow_the_checkpoint_and_weights_a_soter_row_ran():
    shipped = registry().checkpoints["soter-cpu-64"]
    info = lambda digest: json.dumps({"checkpoint": "soter-cpu-64", "identity": {"weights": digest}})  # noqa: E731
    frame = pd.DataFrame([{"task": "forecasting", "dataset": "synthetic-cohort", "model": label, "model_name": "soter",
                           "model_info": info(d)} for label, d in (("soter", shipped.weights), ("soter [old]", "0" * 16))])
    table = mark_table(_table(["soter", "soter [old]"], ("synthetic-cohort",)), frame, "forecasting")
    statuses = {m: e.overlap for (m, _), e in table.entries.items()}
    assert statuses == {"soter": "partial", "soter [old]": "unknown"}
    assert any("not the soter-cpu-64 weights" in text for _, text in table.overlap_notes)


def test_leaderboard_column_and_list_models_line():
    frame = _frame({"last-value": "last-value", "soter-authors": "soter-authors"}, ("heartrate", "mitbih"))
    column = leaderboard_column(["last-value", "soter-authors"], frame, "forecasting")
    assert column[0] == "no: heartrate, mitbih"
    assert column[1].startswith("‡partial: heartrate: BIDMC") and column[1].endswith("| no: mitbih")
    from models.pretraining import data_line

    assert "may have seen: heartrate" in data_line("soter-authors") and "sec:model_training" in data_line("soter-authors")
    assert data_line("not-a-model").startswith("unknown")


def test_list_models_prints_one_pretraining_line_per_model(capsys):
    from harness.cli import main

    assert main(["list", "models", "--long"]) == 0
    out = capsys.readouterr().out
    assert out.count("pre-training data: ") == len(all_specs())
    assert "pre-training data: none: computed from each window's context [baselines/naive.py" in out


def _listed_data(out: str) -> dict[str, str]:
    """`list models`: model name -> its pre-training data line."""
    found, model = {}, None
    for line in out.splitlines():
        if line.startswith("  ") and not line.startswith("   ") and line.split():
            model = line.split()[0]
        elif model and line.strip().startswith("pre-training data: "):
            found[model] = line.strip().removeprefix("pre-training data: ")
    return found


def test_list_models_says_what_the_overlap_registry_says_for_every_registered_model(capsys):
    """One source of truth: the corpus `list` prints is the entry the overlap marks use, and the datasets it
    says the model may have seen are those the marks flag (an adapted NAME@MODE once printed "unknown")."""
    from harness.cli import main

    assert main(["list", "models", "--long"]) == 0  # the pre-training lines: one per model with --long
    listed = _listed_data(capsys.readouterr().out)
    assert set(listed) == set(all_specs())
    reg = registry()
    for name, line in listed.items():
        marks = {d: pretraining.model_overlap(name, d) for d in reg.datasets}
        if line.startswith("unknown"):
            assert all(o.status == "unknown" for o in marks.values()), (name, line)
            continue
        cites = {f"[{o.cite}; checked {o.checked}]" for o in marks.values()}
        assert len(cites) == 1 and line.endswith(cites.pop()), (name, line)  # the entry the marks read
        seen = [d for d, o in marks.items() if o.may_have_seen]
        assert (f"may have seen: {', '.join(seen)} [" in line) if seen else ("may have seen" not in line), (name, line)


def test_a_new_checkpoint_folder_gets_its_entry_without_editing_the_registry(tmp_path):
    copy = tmp_path / "checkpoints"
    shutil.copytree(CHECKPOINTS / "soter-cpu-64", copy / "soter-cpu-64")
    shutil.copytree(CHECKPOINTS / "soter-cpu-64", copy / "soter-cpu-64-anchored")
    (copy / "soter-cpu-64-anchored" / MANIFEST).unlink()
    reg = read_registry(REGISTRY_FILE, copy)
    assert set(reg.checkpoints) == {"soter-cpu-64", "soter-cpu-64-anchored"}
    assert overlap(reg.checkpoints["soter-cpu-64-anchored"], "mitbih").status == "unknown"


# -- a user dataset end to end: manifest -> run -> tables ------------------------------------------
def test_a_declared_source_database_reaches_the_tables_of_run_and_table(tmp_path, capsys):
    import tomllib

    from harness.cli import main
    from protocols.datasets.folder import load_folder_dataset, write_folder_dataset
    from tests.conftest import make_dataset

    folder = tmp_path / "toy"
    manifest = write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), folder)
    data = tomllib.loads(manifest.read_text()) if manifest.suffix == ".toml" else json.loads(manifest.read_text())
    data["source_database"] = "wfdb-record:a103l"  # a record the shipped SOTER checkpoint trained on
    (folder / "dataset.json").write_text(json.dumps(data))
    if manifest.suffix == ".toml":
        manifest.unlink()
    assert load_folder_dataset(folder).metadata["source_database"] == ("wfdb-record:a103l",)
    out = tmp_path / "run"
    assert main(["run", "forecasting", "--dataset", str(folder), "--models", "last-value", "--settings", "48/24",
                 "--out", str(out), "--no-progress", "--max-windows-per-subject", "2"]) == 0
    assert read_declared_sources(out) == {data["name"]: ("wfdb-record:a103l",)}
    assert "pre-training overlap no: last-value" in (out / "tables" / "forecasting.md").read_text()
    # a pre-trained model's rows on that dataset (the shipped SOTER, whose corpus holds record a103l):
    # `harness table` reads the declared source back and marks them
    from harness.reporting.pretraining_marks import marked_task_tables
    from harness.records.store import read_records

    frame = read_records(out / "records.csv")
    soter = frame.assign(model="soter", model_name="soter", model_info=json.dumps({"checkpoint": "soter-cpu-64"}))
    both = pd.concat([frame, soter], ignore_index=True)
    (_, table), = marked_task_tables(both, "forecasting", declared=read_declared_sources(out))
    md = render(table, "markdown")
    assert f"‡ soter on {data['name']}: pre-training overlap yes: its corpus includes wfdb-record:a103l" in md
    (_, bare), = marked_task_tables(both, "forecasting")  # without the declaration: unknown
    assert "soter: pre-training overlap unknown" in render(bare, "markdown")
    capsys.readouterr()
    assert main(["table", "forecasting", "--out", str(out), "--format", "markdown"]) == 0
    assert "pre-training overlap no: last-value" in capsys.readouterr().out


@pytest.mark.parametrize("value", ['""', "3", '["physionet:mitdb", ""]'])
def test_a_bad_source_database_is_one_clear_error(tmp_path, value):
    from protocols.data import DatasetError
    from protocols.datasets.folder import load_folder_dataset

    (tmp_path / "a.csv").write_text("time,ecg\n0,1\n1,2\n")
    (tmp_path / "dataset.toml").write_text(f'name = "x"\nchannels = ["ecg"]\nsource_database = {value}\n'
                                           '[[recordings]]\nfile = "a.csv"\nsubject = "s"\n')
    with pytest.raises(DatasetError, match="'source_database' must be a database id"):
        load_folder_dataset(tmp_path)


def test_the_report_lists_the_registry_and_the_leaderboard_shows_the_overlap(tmp_path):
    from harness.reporting.report import write_report
    from harness.reporting.stats_report import leaderboard
    from tests.test_report import fixed_records

    frame = fixed_records()  # soter, last-value and tirex on MIT-BIH
    board, _ = leaderboard(frame, {}, "forecasting")
    assert board.loc["soter", "pretraining_overlap"] == "no: mitbih"
    assert board.loc["tirex", "pretraining_overlap"] == "no: mitbih"  # its corpus is documented: no MIT-BIH
    results = tmp_path / "run"
    results.mkdir()
    frame.to_csv(results / "records.csv", index=False)
    report = write_report(results, tmp_path / "out").path.read_text()
    section = report[report.index("## Pre-training overlap"):]
    assert "| soter-authors | soter-authors | the SOTER paper's corpus" in section
    assert "| soter-cpu-64 | soter, soter-autoregressive with checkpoint soter-cpu-64 |" in section
    assert "- soter-authors on heartrate: partial: BIDMC" in section
    assert "no‡" not in section and "partial‡" in section and "unknown?" in section
    assert "pre-training overlap no: last-value on mitbih (not pre-trained)" in (
        tmp_path / "out" / "tables" / "forecasting.md").read_text()


def test_a_broken_registry_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    from harness.cli import main

    bad = tmp_path / "r.toml"
    bad.write_text(REGISTRY_FILE.read_text().replace("schema = 1", "schema = 1\nextra = 2"))
    monkeypatch.setattr(pretraining, "registry", lambda: read_registry(bad, CHECKPOINTS))
    assert main(["list", "models", "--long"]) == 2  # the listing that shows the pre-training data
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "r.toml: expected schema = 1" in err


def test_a_label_efficiency_table_is_marked_by_the_dataset_its_file_names():
    frame = _frame({"soter-authors": "soter-authors"}, ("heartrate", "mitbih")).assign(task="classification")
    cols = (Column("25%", "Macro-F1", True), Column("100%", "Macro-F1", True))
    table = Table("c", cols, ("soter-authors",), {("soter-authors", c): Entry(50.0, 1.0, 3, 3, "ok") for c in cols})
    marked = mark_table(table, frame, "classification", "label_efficiency_heartrate")
    assert {e.overlap for e in marked.entries.values()} == {"partial"}
    assert "‡" in render(marked, "markdown").split("\n")[4]
    other = mark_table(table, frame, "classification", "label_efficiency_mitbih")
    assert {e.overlap for e in other.entries.values()} == {"no"}
    assert {e.overlap for e in mark_table(table, frame, "classification", "x").entries.values()} == {""}


def test_a_soter_variant_registered_later_uses_its_default_checkpoints_entry(tmp_path, monkeypatch):
    """A model listed in no entry whose default weights are a shipped checkpoint folder (as main's
    `soter-anchored` with `soter-cpu-64-anchored`) gets that checkpoint's generated entry."""
    copy = tmp_path / "checkpoints"
    shutil.copytree(CHECKPOINTS / "soter-cpu-64", copy / "soter-cpu-64-anchored")
    (copy / "soter-cpu-64-anchored" / MANIFEST).unlink()
    reg = read_registry(REGISTRY_FILE, copy)
    monkeypatch.setattr(pretraining, "default_checkpoint", lambda model: "soter-cpu-64-anchored")
    entry = reg.entry_for("soter-anchored")
    assert entry is reg.checkpoints["soter-cpu-64-anchored"] and overlap(entry, "wdd").status == "unknown"
    monkeypatch.setattr(pretraining, "default_checkpoint", lambda model: None)
    assert reg.entry_for("someone-elses-model") is None
