"""`python -m harness.selection`: held-out model selection, the entry point the training logs and model cards
name; the command lives in :mod:`harness.commands.selection`."""

import sys

from harness.commands.selection import main

if __name__ == "__main__":
    sys.exit(main())
