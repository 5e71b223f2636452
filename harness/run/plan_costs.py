"""``harness plan``: the cells a run would compute, per model and dataset, with their estimated cost.

The cells are the run's own (``runner.plan``, the same flags); a cell is *cached* when ``--out`` holds a
finished row of it that a run would skip. Costs: :mod:`harness.run.costs` (measured rows in ``--out``, else the
calibration, else unknown). The setup (loading the data, planning) is not estimated but measured: this command
does the same work before it can count anything. Everything is in CPU seconds where measured so (the calibration's
rows say where only the wall clock was): the wall estimate is that of a machine running nothing else.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from harness.records.store import RecordStore
from harness.run.costs import (cell_cost, cell_work, load_seconds, median_seconds, random_weights,
                               read_calibration)
from harness.registry.versions import task_version
from harness.run.runner import RunConfig, plan, row_is_current


def estimate_plan(config: RunConfig, started: float | None = None) -> dict[str, Any]:
    """The plan as a JSON-ready dict: rows per (model, dataset), per-model load times, totals. ``started``: the
    command's ``time.process_time()`` at its start (the setup is counted from there)."""
    started = time.process_time() if started is None else started
    loaded: dict[str, Any] = {}
    cells, summary = plan(config, None, loaded)
    planned_all = len(cells)
    if config.shard is not None:
        from harness.run.shards import shard_cells

        cells = shard_cells(cells, config.shard[0], config.shard[1], loaded)
    rows_in_out: dict[str, dict[str, str]] = {}
    if Path(config.records_path).is_file():
        rows_in_out = RecordStore(config.records_path, readonly=True).rows()
    measured = median_seconds((r["model"], r["setting"], float(r["seconds"])) for r in rows_in_out.values()
                              if r["task"] == config.task and r["status"] == "ok" and r["seconds"])
    rates = read_calibration()
    work = cell_work((cell for cell, _ in cells), loaded)
    revisions = {m: identity.get("revision", 1) for m, identity in summary.identities.items()}
    version = task_version(config.task_object)
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    randoms: dict[str, bool] = {}
    for cell, fields in cells:
        randoms.setdefault(cell.model, random_weights(cell))
        g = groups.setdefault((cell.model, str(fields["dataset"])), {
            "model": cell.model, "dataset": str(fields["dataset"]), "cells": 0, "cached": 0, "to_run": 0,
            "samples": 0, "cpu_seconds": 0.0, "gpu_seconds": 0.0, "sources": set()})
        g["cells"] += 1
        if not config.rerun and row_is_current(rows_in_out.get(str(fields["key"])), config.task, version,
                                              revisions.get(cell.model, 1)):
            g["cached"] += 1
            continue
        g["to_run"] += 1
        n, calls = work[cell] or (None, 0)
        g["samples"] = None if n is None or g["samples"] is None else g["samples"] + n
        cost = cell_cost(cell.model, cell.setting, n, rates, randoms[cell.model], measured, calls)
        g["sources"].add(cost.source)
        g["cpu_seconds"] = None if cost.cpu is None or g["cpu_seconds"] is None else g["cpu_seconds"] + cost.cpu
        g["gpu_seconds"] = None if cost.gpu is None or g["gpu_seconds"] is None else g["gpu_seconds"] + cost.gpu
    rows = []
    for g in groups.values():
        g["source"] = "; ".join(sorted(g.pop("sources"))) or "cached"
        rows.append(g)
    running = sorted({g["model"] for g in rows if g["to_run"]})
    loads = {m: load_seconds(m, rates, "cpu", randoms[m]) for m in running}
    setup = time.process_time() - started  # CPU seconds, as the calibration's
    cpu = [g["cpu_seconds"] for g in rows if g["to_run"]]
    gpu = [g["gpu_seconds"] for g in rows if g["to_run"]]
    unknown = sorted({g["model"] for g in rows if g["to_run"] and g["cpu_seconds"] is None})
    cells_cpu = sum(c for c in cpu if c is not None)
    load_total = sum(v for v in loads.values() if v is not None)
    total = {"cells": sum(g["cells"] for g in rows), "cached": sum(g["cached"] for g in rows),
             "to_run": sum(g["to_run"] for g in rows), "cpu_seconds": cells_cpu if not unknown else None,
             "cpu_seconds_known": cells_cpu, "gpu_seconds": sum(gpu) if gpu and None not in gpu else None,
             "unknown_models": unknown}
    return {
        "task": config.task, "out": str(config.out), "device": summary.device, "jobs": config.jobs,
        "shard": list(config.shard) if config.shard else None, "planned_cells": planned_all,
        "calibration": str(_calibration_name()), "rows": rows, "load_seconds": loads, "total": total,
        "setup_seconds": setup,
        # one process runs the cells one after another; N jobs share them (each worker loads the models it runs); the
        # calibration is CPU time where measured, so this is the wall time of a machine that runs nothing else
        "wall_seconds": None if unknown else setup + load_total + cells_cpu / max(1, config.jobs),
    }


def _calibration_name() -> str:
    from harness.run.costs import CALIBRATION, REPO

    names = []
    for path in CALIBRATION:
        try:
            names.append(str(Path(path).relative_to(REPO)))
        except ValueError:
            names.append(str(path))
    return " + ".join(names)


def duration(seconds: float | None) -> str:
    """3.2 s, 4 min 10 s, 2 h 05 min, 3.1 days; ``unknown`` for None."""
    if seconds is None:
        return "unknown"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"
    return f"{seconds / 86400:.1f} days"


def plan_text(p: dict[str, Any]) -> str:
    """The plan as a table: one line per model and dataset, the total, the setup and the wall-time estimate."""
    total = p["total"]
    share = f"{100 * total['cached'] / total['cells']:.0f}%" if total["cells"] else "0%"
    head = (f"plan of `{p['task']}`{' shard %d/%d' % tuple(p['shard']) if p['shard'] else ''}: {total['cells']} cells"
            f"{' (of the plan' + chr(39) + 's ' + str(p['planned_cells']) + ')' if p['shard'] else ''}, "
            f"{total['cached']} already in {p['out']} ({share} cached), {total['to_run']} to run; device {p['device']}")
    cols = ("model", "dataset", "cells", "cached", "to run", "CPU time", "GPU time", "estimated from")
    lines = [[g["model"], g["dataset"], str(g["cells"]), str(g["cached"]), str(g["to_run"]),
              duration(g["cpu_seconds"]) if g["to_run"] else "-",
              (duration(g["gpu_seconds"]) if g["gpu_seconds"] is not None else "not measured") if g["to_run"] else "-",
              g["source"]] for g in p["rows"]]
    known = "" if total["cpu_seconds"] is not None else f" + unknown ({', '.join(total['unknown_models'])})"
    lines.append(["total", "", str(total["cells"]), str(total["cached"]), str(total["to_run"]),
                  duration(total["cpu_seconds_known"]) + known,
                  duration(total["gpu_seconds"]) if total["gpu_seconds"] is not None else "not measured", ""])
    widths = [max(len(r[i]) for r in [list(cols), *lines]) for i in range(len(cols))]
    fmt = "  ".join(f"{{:<{w}}}" if i < 2 or i == 7 else f"{{:>{w}}}" for i, w in enumerate(widths))
    out = [head, fmt.format(*cols), *(fmt.format(*r) for r in lines)]
    loads = [f"{m} {duration(v)}" for m, v in p["load_seconds"].items() if v is not None]
    out.append(f"setup (loading the data, planning; measured by this command, CPU): {duration(p['setup_seconds'])}"
               + (f"; loading the models, once per process (calibration): {', '.join(loads)}" if loads else ""))
    wall = p["wall_seconds"]
    out.append(f"estimated wall time with --jobs {p['jobs']} on an otherwise idle machine (CPU-time calibration; a busy "
               f"machine's load stretches it): "
               + (duration(wall) if wall is not None else f"unknown (no estimate for {', '.join(total['unknown_models'])})")
               + f"; calibration: {p['calibration']} (benchmarks/system_overhead.py)")
    return "\n".join(line.rstrip() for line in out)
