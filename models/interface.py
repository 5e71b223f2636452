"""Moved to :mod:`protocols.interface`, the contract the protocols measure (the lowest layer). This
module is that same module under its old name, for third-party plugins that import ``models.interface``;
it imports from ``protocols`` only. New code imports ``protocols.interface``."""
import sys
from protocols import interface
sys.modules[__name__] = interface
