"""What a worker does once, before it takes work (docs/architecture.md §7).

Celery's ``worker_init`` calls :func:`prepare` in the worker's main process, before a
prefork pool forks. A new worker's first wave of runs would otherwise pay seconds of
imports together, on every thread at once: the ledger's stores are imported per
transaction (so a CLI read loads none of them), and litellm imports much of itself only
on its first call. Then what is loaded — half a million objects, litellm's most of them,
living as long as the process — is put out of the garbage collector's sight.
"""

from __future__ import annotations

import gc
import importlib

from council.agents import gateway

# What a run and its evaluations import when first used (the ledger's stores are imported
# per transaction, so a CLI read loads none of them); a worker imports them all up front.
RUN_PATH_MODULES = (
    "council.adapters.celery",
    "council.adapters.coalesce",
    "council.domain.chain_codec",
    "council.domain.manifests",
    "council.ledger.actions",
    "council.ledger.apply_output",
    "council.ledger.branches",
    "council.ledger.claims",
    "council.ledger.committer",
    "council.ledger.db",
    "council.ledger.evaluation_chains",
    "council.ledger.events",
    "council.ledger.evidence",
    "council.ledger.frontier",
    "council.ledger.nodes",
    "council.ledger.runs",
    "council.ledger.snapshots",
    "council.ledger.traces",
    "council.services.consolidation",
    "council.services.execution",
)


def prepare() -> None:
    """Import the run path, load the model library with one simulated call (once a
    process), then freeze the loaded heap out of the garbage collector's sight."""
    for name in RUN_PATH_MODULES:
        importlib.import_module(name)
    gateway.preload()
    # Out of the collector's sight, its full passes no longer walk them all: without this a
    # prepared process spent a quarter more CPU a run. Before a fork it also keeps the pool
    # processes from copying the pages the collector would write to.
    gc.collect()
    gc.freeze()
