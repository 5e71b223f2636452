"""The commands of ``python -m harness`` beside ``run`` (data, plan and merge, the stress tests' commands, the
forecasting examples) and held-out model selection (``python -m harness.selection``).

``harness.cli`` builds the parser and hands each command to its module here; a module imports its heavy
libraries inside the function that needs them, so that ``--help``, ``list`` and a usage error start fast.
"""
