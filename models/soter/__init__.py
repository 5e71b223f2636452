"""SOTER, the paper's model: config, modules, checkpoint I/O and the harness adapter.

Heavy imports (torch) happen in the submodules; ``models.soter.registration`` is cheap.
"""
