"""The committer's round as two calls against real Postgres (revision 0044): a batch is
decided with one council_evaluate_read_v1 call and one council_evaluate_write_v1 call, and
writes the records the statements before them wrote — every table, every event kind, and
snapshots that hash as the named snapshot queries (replay's) build them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.domain.commands import NewVersion
from council.domain.snapshot import snapshot_digests
from council.ledger import pg
from council.ledger.snapshots import current_snapshot
from council.services.consolidation import consolidate, consolidate_many, replay
from council.services.nodes import add_version, show_node
from tests.builders import ACTOR, Ledger
from tests.engines import pq, unit_of_work, uow_of
from tests.rows import counts, query


def _named_statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the named queries run from now on (every store runs them through pg._run)."""
    ran: list[str] = []
    real = pg._run

    def recorded(conn: pg.Connection, name: str, params: Any, factory: Any, **kw: Any) -> Any:
        ran.append(name)
        return real(conn, name, params, factory, **kw)

    monkeypatch.setattr(pg, "_run", recorded)
    return ran


def _digest_now(engine: Engine, version_id: UUID) -> str:
    """The snapshot hash as the named queries build it (replay's path), read now."""
    with unit_of_work(engine) as conn:
        return snapshot_digests(current_snapshot(pq(conn), version_id))[0]


def _grew(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    return {table: n - before.get(table, 0) for table, n in after.items() if n != before.get(table, 0)}


def test_a_batch_is_decided_with_one_read_call_and_one_write_call(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a node whose newer version is ready (its older version holds the live
    # consolidation it will supersede), and a node with one endorsement only (not ready)
    ledger = Ledger.new(engine)
    v1 = ledger.ready_node("v1")
    first = consolidate(uow_of(engine), v1, actor=ACTOR)
    logical = show_node(uow_of(engine), v1).logical_node_id
    v2 = add_version(uow_of(engine), NewVersion(logical_node=logical, content="v2"), actor=ACTOR).version_id
    for i, provider in enumerate(("anthropic", "zhipu")):
        run_id = ledger.run(provider)
        ledger.claim(run_id, v2, cites=[ledger.evidence[i + 1]])
        ledger.close(run_id)
    lone = UUID(str(ledger.node("one endorsement")["version_id"]))
    run_id = ledger.run("openai")
    ledger.claim(run_id, lone, cites=[ledger.evidence[0]])
    ledger.close(run_id)
    before = counts(engine)
    last_event = query(engine, "SELECT max(id) AS id FROM events")[0]["id"]
    digests = {v: _digest_now(engine, v) for v in (v2, lone)}
    # When both are consolidated in one batch
    ran = _named_statements(monkeypatch)
    results = {r.node_version_id: r for r in consolidate_many(uow_of(engine), [v2, lone], actor=ACTOR)}
    # Then the transaction deciding them sent one read call and one write call (the weights
    # that planned the batch are read before it)
    assert ran == ["commit_weights", "evaluate_read", "evaluate_write"]
    assert results[v2].outcome == "committed" and results[lone].outcome == "not_ready"
    assert results[v2].superseded_consolidation_id == first.consolidation_id
    # And each decision hashed the snapshot the named queries build, byte for byte
    assert {v: results[v].snapshot_sha256 for v in digests} == digests
    # And the records are those the committer always wrote: a consolidation with its
    # evidence index, memory item and `resolved` transition; the old one superseded with its
    # memory item; a not-ready evaluation with its reasons; one event of each kind, in order
    grew = _grew(before, counts(engine))
    assert grew.pop("decision_reasons", 0) >= 0  # stored once by content: earlier rows may serve
    assert grew == {
        "consolidations": 1,
        "consolidation_evidence": 2,
        "consolidation_transitions": 1,
        "consolidation_evaluations": 1,
        "memory_items": 1,
        "memory_transitions": 1,
        "node_status_transitions": 1,
        "events": 3,
    }
    added = query(engine, "SELECT kind FROM events WHERE id > :id ORDER BY id", id=last_event)
    kinds = [e["kind"] for e in added]
    assert kinds == ["consolidation.not_ready", "consolidation.superseded", "consolidation.committed"]
    states = Counter(r["status"] for r in query(engine, "SELECT status FROM consolidations"))
    assert states == Counter({"superseded": 1, "live": 1})
    # And every record replays: the stored snapshots and evaluation rebuild to their hashes
    stored = [results[v2].consolidation_id, results[lone].evaluation_id]
    assert all(replay(uow_of(engine), record_id).match for record_id in stored if record_id is not None)


def test_a_repeat_is_answered_by_the_read_call_alone(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a consolidated node and a not-ready one, each decided once
    ledger = Ledger.new(engine)
    ready = ledger.ready_node()
    lone = UUID(str(ledger.node("one endorsement")["version_id"]))
    run_id = ledger.run("openai")
    ledger.claim(run_id, lone, cites=[ledger.evidence[0]])
    ledger.close(run_id)
    first = {r.node_version_id: r for r in consolidate_many(uow_of(engine), [ready, lone], actor=ACTOR)}
    before = counts(engine)
    # When both are decided again, unchanged
    ran = _named_statements(monkeypatch)
    again = {r.node_version_id: r for r in consolidate_many(uow_of(engine), [ready, lone], actor=ACTOR)}
    # Then one read call answered both (the live consolidation; the evaluation recorded for
    # the same snapshot hash), nothing was written, and the answers are the first ones
    assert ran == ["commit_weights", "evaluate_read"]
    assert counts(engine) == before
    assert again[ready].outcome == "already_consolidated"
    assert again[ready].consolidation_id == first[ready].consolidation_id
    assert (again[lone].outcome, again[lone].evaluation_id) == ("not_ready", first[lone].evaluation_id)
