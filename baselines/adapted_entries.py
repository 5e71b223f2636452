"""The adapted entries of the baselines that can be fine-tuned (issue #49, ``run --adapt``): ``fracast@head`` and
``fracast@full`` (``baselines.fracast_adaptation``). Cheap: imports no torch."""

from __future__ import annotations

import baselines.fracast_model  # noqa: F401 (registers fracast, the base of its adapted entries)
from models.adapted import adapted_spec
from models.registry import register, registered_spec
from protocols.adaptation import ADAPTED_MODES

for _mode in ADAPTED_MODES:
    register(adapted_spec(registered_spec("fracast"), _mode, "baselines.fracast_adaptation:load_adapted_fracast"))
