"""Issue #51, item 3: rows that explain themselves. A row whose numbers come from a model's documented limitation
(``models.registry.Limitation``, on its registry entry) is marked in its table, and the limitation's note, naming
the option that lifts it, is printed under the table; a table without such a row is unchanged."""

from __future__ import annotations

import json

import pytest

from harness.records.store import RecordStore, read_records, row_key
from harness.reporting.tables import render, task_tables
from models.registry import get_spec

CONTIGUOUS = "imputation;len=96;warmup=16;points=8;maxw=8;stride=None;mask=contiguous-0.5s-exponential-independent-v1"
POINTS = "imputation;len=96;warmup=16;points=8;maxw=8;stride=None"


def _write(store: RecordStore, model: str, task: str, condition: str, protocol: str, err: float,
           options: dict | None = None) -> None:
    """One finished row per fold, with the model_info the runner writes (the model's description, which names
    ``control_beyond`` only where it departs from the default, and the identity of its options)."""
    options = options or {}
    info = json.dumps({"name": model, **options, "identity": {"code": "c", "model_id": f"m{sorted(options.items())}",
                                                              "options": options}})
    for fold in ("S00", "S01"):
        fields = dict(task=task, dataset="d", fold=fold, setting="96", condition=condition, model=model, seed=0,
                      protocol=f"{protocol};data=x")
        store.write({**fields, "key": row_key(f"m{sorted(options.items())}", **fields), "status": "ok",
                     "sse": err ** 2 * 4, "sae": err * 4, "n_points": 4, "rmse": err, "mae": err, "n_windows": 4,
                     "model_info": info, "finished_at": "2026-11-25T00:00:00+00:00"})


def _tables(tmp_path, rows, task="imputation"):
    store = RecordStore(tmp_path / "records.csv")
    for row in rows:
        _write(store, *row)
    return task_tables(read_records(tmp_path / "records.csv"), task)


CONDITION = "contiguous-0.5s-exponential-independent missing=25%"


def test_the_contiguous_imputation_table_with_soter_names_the_option_that_fixes_it(tmp_path):
    tables = _tables(tmp_path, [("soter", "imputation", CONDITION, CONTIGUOUS, 11.7),
                                ("locf", "imputation", CONDITION, CONTIGUOUS, 0.22)])
    (_, table), = tables
    for style in ("text", "markdown", "latex"):
        text = " ".join(render(table, style, with_model_notes=False).replace(r"\_", "_").split())
        assert "--model-option soter.control_beyond=hold" in text, style
        assert "extrapolates the spline control past a channel's last observation" in text, style
    md = render(table, "markdown").splitlines()
    assert any(line.startswith("| soter § |") for line in md)  # the affected row carries the mark
    assert any(line.startswith("| locf |") for line in md)  # the others do not
    assert any(line.startswith("§ soter: under contiguous gaps") for line in md)


def test_with_the_control_held_or_on_other_tables_there_is_no_note(tmp_path):
    held = _tables(tmp_path / "held", [("soter", "imputation", CONDITION, CONTIGUOUS, 0.38, {"control_beyond": "hold"}),
                                       ("locf", "imputation", CONDITION, CONTIGUOUS, 0.22)])
    points = _tables(tmp_path / "points", [("soter", "imputation", "missing=25%", POINTS, 0.06),
                                           ("locf", "imputation", "missing=25%", POINTS, 0.07)])
    forecasting = _tables(tmp_path / "forecasting", [("soter", "forecasting", "clean", "maxw=16;stride=None;seed=0", 0.1)],
                          "forecasting")
    for tables in (held, points, forecasting):
        for _, table in tables:
            assert not table.limited and not table.limitation_notes
            for style in ("text", "markdown", "latex"):
                assert "control_beyond=hold holds" not in render(table, style) and "§" not in render(table, style)


def test_two_configurations_in_one_table_mark_only_the_one_that_extrapolates(tmp_path):
    (_, table), = _tables(tmp_path, [("soter", "imputation", CONDITION, CONTIGUOUS, 11.7),
                                     ("soter", "imputation", CONDITION, CONTIGUOUS, 0.38, {"control_beyond": "hold"})])
    assert len(table.models) == 2
    assert [m for m, _ in table.limited] == [m for m in table.models if "hold" not in m]
    assert len(table.limitation_notes) == 1


def test_every_soter_entry_declares_the_limitation_and_soter_anchored_is_lifted_by_its_default():
    for name in ("soter", "soter-anchored"):
        limitation, renewal = get_spec(name).limitations
        assert renewal.note == limitation.note and renewal.applies("irregular", "irregular-v1", {}, "impute renewal=0.5")
        assert not renewal.applies("irregular", "irregular-v1", {}, "impute drop=0.5")
        assert f"--model-option {name}.control_beyond=hold" in limitation.note
        assert limitation.applies("imputation", CONTIGUOUS + ";data=x", {})
        assert not limitation.applies("imputation", POINTS + ";data=x", {})
        assert not limitation.applies("forecasting", CONTIGUOUS, {})
        assert not limitation.applies("imputation", CONTIGUOUS, {"control_beyond": "zero"})
    # soter-anchored holds by default (its entry.toml), and its rows' description says so
    assert get_spec("soter-anchored").options["control_beyond"] == "hold"


def test_a_limitation_is_data():
    from models.registry import Limitation

    lim = Limitation("n", tasks=("noise",), protocol=("artefact=motion",), lifted_by={"x": ("1",)})
    assert lim.applies("noise", "noise;maxw=8;artefact=motion-v2;data=y", {})
    assert not lim.applies("noise", "noise;maxw=8;artefact=motion-v2", {"x": 1})
    assert not lim.applies("noise", "noise;maxw=8", {})
    with pytest.raises(TypeError):
        Limitation()  # the note is required


def test_an_entry_declares_its_own_limitations_as_data(tmp_path):
    from models.soter.entries import ENTRY_FILE, EntryError, read_entry

    (tmp_path / ENTRY_FILE).write_text('name = "x"\nsummary = "y"\n[[limitations]]\nnote = "slow at 250 Hz: set z"\n'
                                       'tasks = ["noise"]\nprotocol = ["artefact=motion"]\n'
                                       '[limitations.lifted_by]\nz = ["1"]\n')
    spec = read_entry(tmp_path).spec()
    assert [lim.note for lim in spec.limitations][2:] == ["slow at 250 Hz: set z"]  # after every entry's control ones
    assert spec.limitations[2].applies("noise", "noise;artefact=motion-v2", {}) and spec.limitations[2].lifted_by == {"z": ("1",)}
    (tmp_path / ENTRY_FILE).write_text('name = "x"\nsummary = "y"\n[[limitations]]\ntasks = ["noise"]\n')
    with pytest.raises(EntryError, match="limitations: each needs a note"):
        read_entry(tmp_path)


IRREGULAR = "irregular-v1;maxw=16;stride=None;seed=0"


def test_soter_imputing_through_renewal_outages_is_marked_and_scattered_drops_are_not(tmp_path):
    """The irregular task's renewal outages are contiguous gaps: SOTER's extrapolated control diverges there as under
    imputation's contiguous mask (one cohort fold scored 880 against locf's 9), so its rows carry the same note;
    scattered drops do not, nor does a held control."""
    rows = [(m, "irregular", c, IRREGULAR, e, o) for m, e, o in (("soter", 2.9, None), ("locf", 0.09, None))
            for c in ("impute regular", "impute renewal=0.5", "impute drop=0.5")]
    tables = dict(_tables(tmp_path / "plain", rows, task="irregular"))
    marked = {name: "| soter § |" in render(table, "markdown") for name, table in tables.items()}
    assert any(v for k, v in marked.items() if "renewal" in k), marked
    assert not any(v for k, v in marked.items() if "renewal" not in k), marked
    held = dict(_tables(tmp_path / "held", [(m, "irregular", c, IRREGULAR, 0.1, {"control_beyond": "hold"})
                                            for m in ("soter",) for c in ("impute regular", "impute renewal=0.5")],
                        task="irregular"))
    assert not any("§" in render(table, "markdown") for table in held.values())
