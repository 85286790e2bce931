"""Use cases of runs as records: a run made outside the workers, one run shown, a thread's runs."""

from __future__ import annotations

from council.domain.commands import IdRef, RecordedRun
from council.domain.results.runs import RunClosed, RunList, RunRecorded, RunShown
from council.services.ports import UnitOfWork


def record_run(uow: UnitOfWork, recorded: RecordedRun, *, actor: str) -> RunRecorded:
    """Record a run made outside the workers, with its lineage and what it had seen. It is
    open (``running``, held by its recorder) until :func:`close_run`; meanwhile its recorder
    adds its claims."""
    with uow() as tx:
        return tx.runs.record(recorded, actor=actor)


def close_run(uow: UnitOfWork, run: IdRef, *, actor: str) -> RunClosed:
    """Close a run recorded by hand (only its recorder may): it ends succeeded and takes
    no more claims."""
    with uow() as tx:
        return tx.runs.close(tx.resolve("run", run), actor=actor)


def show_run(uow: UnitOfWork, run: IdRef) -> RunShown:
    """Lineage, exposures, request hash, claims, the pinned executor and each attempt."""
    with uow() as tx:
        return tx.runs.show(tx.resolve("run", run))


def thread_runs(uow: UnitOfWork, thread: IdRef) -> RunList:
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        return RunList(items=tx.runs.of_thread(thread_id))
