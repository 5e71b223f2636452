"""Result records: the append-only store, row keys, configurations, code identity, per-window files."""
