"""Golden numbers: for every task version and every model revision, what its numbers were when it was declared.

``tests/test_golden.py`` recomputes them and fails when they moved without a bump; ``python -m tests.golden write``
writes the file of a version that has none (docs/versions.md).
"""
