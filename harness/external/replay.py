"""Models that stand in for a model outside the harness: :class:`Capture` records what the harness hands a
model (the export), :class:`Replay` answers with a predictions file (the score).

Both run through the task's own ``evaluate`` (the path of a normal run), so the exported inputs are the
ones a registered model would get, and a file is scored by the code that scores registered models.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from protocols.interface import Capabilities, Model, SeriesBatch


class ExportMismatch(ValueError):
    """What the harness hands a model now differs from what was exported (other data or code)."""


@dataclass
class Calls:
    """The model calls of one cell, in the order the harness made them (one row per window or query)."""

    values: list[np.ndarray] = field(default_factory=list)  # [B, C, T] as handed over (unobserved: 0)
    mask: list[np.ndarray] = field(default_factory=list)  # [B, C, T] bool
    times: list[np.ndarray] = field(default_factory=list)  # [B, T]
    query_times: list[np.ndarray] = field(default_factory=list)  # [B, H] (imputation: H = 1)

    def add(self, batch: SeriesBatch, query_times: np.ndarray) -> None:
        self.values.append(batch.values.copy())
        self.mask.append(batch.mask.copy())
        self.times.append(batch.timestamps.copy())
        self.query_times.append(np.asarray(query_times, dtype=np.float64).reshape(batch.shape[0], -1).copy())


class Capture(Model):
    """Records every call; forecasts zeros (the cell's metrics are thrown away). Its imputation of a call's
    row k is the number of rows asked before it, so the caller can map queries to the order of the calls."""

    name = "capture"
    capabilities = Capabilities(forecast=True, impute=True, multivariate=True, min_context=1)

    def __init__(self) -> None:
        self.calls = Calls()
        self.rows = 0

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        self.calls.add(batch, query_times)
        return np.zeros((*batch.shape[:2], np.asarray(query_times).shape[1]))

    def _impute(self, batch: SeriesBatch, query_time: np.ndarray) -> np.ndarray:
        self.calls.add(batch, query_time)
        b, c, _ = batch.shape
        order = self.rows + np.arange(b, dtype=np.float64)
        self.rows += b
        return np.repeat(order[:, None], c, axis=1)


class Replay(Model):
    """Answers each call with the next rows of a predictions array, after checking that the call's inputs
    are exactly the exported ones (observed values, mask, timestamps, query times)."""

    name = "replay"

    def __init__(self, inputs: dict[str, np.ndarray], point: np.ndarray, quantiles: np.ndarray | None = None,
                 where: str = "") -> None:
        self.inputs, self.point, self.quantiles, self.where = inputs, point, quantiles, where
        self.capabilities = Capabilities(forecast=True, impute=True, multivariate=True, min_context=1,
                                         quantiles=quantiles is not None)
        self.cursor = 0

    def _rows(self, batch: SeriesBatch, query_times: np.ndarray) -> slice:
        b, _, t = batch.shape
        rows = slice(self.cursor, self.cursor + b)
        self.cursor += b
        mask = self.inputs["mask"][rows, :, :t]
        prefix = self.inputs.get("prefix_length")  # imputation: each query's own prefix, padded to the segment
        same = (rows.stop <= self.point.shape[0]
                and (prefix is None or bool(np.all(prefix[rows] == t)))
                and np.array_equal(mask, batch.mask)
                and np.array_equal(self.inputs["context"][rows, :, :t][mask], batch.values[mask])
                and np.array_equal(self.inputs["context_times"][rows, :t], batch.timestamps)
                and np.array_equal(self.inputs["query_times"][rows],
                                   np.asarray(query_times, dtype=np.float64).reshape(b, -1)))
        if not same:
            raise ExportMismatch(f"{self.where}: the harness now hands the model other inputs than the export holds "
                                 f"(rows {rows.start}..{rows.stop - 1}); the data or the protocol code changed since "
                                 "the export: export again and forecast the new windows")
        return rows

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        return self.point[self._rows(batch, query_times)]

    def _forecast_quantiles(self, batch, query_times, levels):
        rows = self._rows(batch, query_times)
        return self.point[rows], self.quantiles[rows]

    def _impute(self, batch: SeriesBatch, query_time: np.ndarray) -> np.ndarray:
        return self.point[self._rows(batch, query_time)]
