"""``python -m harness.studies train|evaluate``: the study runners (:mod:`harness.studies.runners`)."""

import sys

from harness.studies.runners import main

sys.exit(main())
