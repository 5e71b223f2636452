"""A plugin whose import takes as long as the test wants (``$SOTER_TEST_IMPORT_DIR``): it writes ``importing`` there,
then waits for ``go``. Loaded by ``$SOTER_BENCH_PLUGINS`` in the command's start-up, as a slow import on a busy
machine would be."""

import os
import time
from pathlib import Path

_folder = Path(os.environ["SOTER_TEST_IMPORT_DIR"])
(_folder / "importing").write_text("")
while not (_folder / "go").exists():
    time.sleep(0.05)
