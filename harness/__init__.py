"""The harness: CLI, runner (cached, resumable), record store, tables and figures.

Sub-packages by concern (docs/layout.md): ``registry`` (the floor: task registry, options, metric
columns), ``records`` (store, keys, configurations, per-window and cell files), ``run`` (runner, cells,
executors, embedding cache), ``reporting`` (tables, figures, statistics, the report), ``tasks``,
``external`` (export and scoring of forecasts made elsewhere), ``commands``, and the entry points at the top
(``cli``: ``python -m harness``; ``selection``: ``python -m harness.selection``).
"""
