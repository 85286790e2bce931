"""Typed results: one definition per shape that crosses a boundary.

The ledger builds them, services return them, the faces render them (the
CLI's ``--json``, the HTTP API's response models) and
``schema/cli-outputs.schema.json`` is generated from them. Pure values: no I/O.
"""
