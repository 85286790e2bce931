"""Helpers that run inside a caller's transaction (docs/architecture.md §10).

Each takes the transaction the calling use case opened (``tx``) as its first
argument and neither opens, commits nor ends one; its writes, if any, land or
roll back with the caller's. Use cases (``council/services/*.py``) call them;
faces never do, and no use case here takes a unit of work
(``tests/unit/test_layers.py`` keeps it so).
"""
