"""The outside-agent use cases against real Postgres (docs/architecture.md §7, outside agents).

What the MCP tests (tests/e2e/test_mcp_server.py) do not reach through a client:
a begun run is never taken by the sweep or a worker, its holder alone ends it,
and with a broker configured its touched versions are queued for the committer.
"""

from __future__ import annotations

from uuid import UUID

import pytest
from sqlalchemy import Engine, text

from council.adapters.scheduler import Recorder
from council.domain.commands import RecordedRun
from council.errors import BadInput
from council.ledger.unit import UnitOfWork
from council.services.outside import begin_run, node_status, submit_output
from council.services.sweep import sweep
from tests.builders import Ledger


def _begin(ledger: Ledger, holder: str, model: str = "openai/gpt-5.5") -> UUID:
    run = begin_run(ledger.uow, RecordedRun(ledger.thread_id, "outside", model), holder=holder, actor="test")
    assert run.status == "running"
    return run.id


def _endorse(version_id: UUID, evidence_id: UUID) -> dict[str, object]:
    cite = {"evidence_id": str(evidence_id)}
    return {"claims": [{"node_version_id": str(version_id), "type": "endorse", "cites": [cite]}]}


def test_the_sweep_and_the_workers_never_take_a_begun_run(engine: Engine, uow: UnitOfWork) -> None:
    ledger = Ledger.new(engine)
    run_id = _begin(ledger, "mcp:one")
    recorder = Recorder()
    swept = sweep(uow, recorder, settle_s=0, runs_settle_s=0)
    assert run_id not in swept.runs and recorder.runs == []
    with uow() as tx:
        assert tx.runs.begin(run_id, owner="worker:x", lease_s=60).run is None


def test_only_the_holder_submits_and_a_submission_queues_its_versions(
    engine: Engine, uow: UnitOfWork
) -> None:
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    run_id = _begin(ledger, "mcp:one")
    with pytest.raises(BadInput, match="not one this session began"):
        submit_output(uow, None, run_id, _endorse(version_id, ledger.evidence[0]), holder="mcp:two")
    recorder = Recorder()
    submitted = submit_output(
        uow, recorder, run_id, _endorse(version_id, ledger.evidence[0]), holder="mcp:one"
    )
    assert submitted.queued_evaluations == [version_id] and submitted.evaluations == []
    assert recorder.evaluations == [version_id]
    with engine.connect() as conn:
        attempts = conn.execute(
            text("SELECT event, worker, status FROM run_attempts WHERE run_id = :r ORDER BY created_at"),
            {"r": run_id},
        ).all()
    assert [tuple(a) for a in attempts] == [("claimed", "mcp:one", None), ("ended", "mcp:one", "succeeded")]


def test_node_status_for_no_run_withholds_stances_and_records_nothing(
    engine: Engine, uow: UnitOfWork
) -> None:
    ledger = Ledger.new(engine)
    version_id = ledger.ready_node()
    status = node_status(uow, version_id, run=None, holder="mcp:one")
    assert status.claims is None and status.groups is None and status.exposures_recorded == 0
    assert status.support_groups == 2 and status.outcome == "consolidate" and not status.consolidated
    assert {r.rule for r in status.reasons} >= {"independent_support", "provider_diversity"}
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM run_exposures")).scalar_one() == 0


class _BrokerAway(Recorder):
    def enqueue_evaluations(self, version_ids: object) -> None:
        raise ConnectionError("broker away")


def test_a_written_output_is_answered_as_written_when_its_evaluation_cannot_be_queued(
    engine: Engine, uow: UnitOfWork
) -> None:
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    run_id = _begin(ledger, "mcp:one")
    submitted = submit_output(
        uow, _BrokerAway(), run_id, _endorse(version_id, ledger.evidence[0]), holder="mcp:one"
    )
    assert submitted.status == "succeeded" and len(submitted.applied.claims) == 1
    assert submitted.queued_evaluations == [] and "sweep" in (submitted.evaluation_deferred or "")
    with uow() as tx:
        assert tx.runs.show(run_id).status == "succeeded"
