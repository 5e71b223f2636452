"""The harness: CLI, runner (cached, resumable), record store, tables and figures."""
