"""The floor of the harness: what the rest looks things up in. It imports no other part of the harness."""
