"""Evaluation chains against real Postgres (revisions 0013 and 0014, docs/architecture.md §4).

The not-ready evaluations of a version are stored as a chain: a root with the
whole manifest, then links holding only what changed (since 0014 in compact
rows, with no periodic root). Every evaluation must still replay exactly,
whatever order the records are read in, whether the committer kept the tail
or walked the chain, with evaluators racing on the node.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy import Engine, text

from benchmarks.harness import race
from council.domain import chain_codec
from council.domain import manifests as chain
from council.domain.snapshot import manifest_of
from council.ledger import evaluation_chains
from council.ledger.snapshots import current_snapshot
from council.services.consolidation import consolidate, replay
from tests.builders import ACTOR, Ledger
from tests.engines import engine_for, pq, unit_of_work, uow_of
from tests.processes import RACE_START_METHOD


@dataclass(frozen=True)
class _Row:
    id: UUID
    seq: int
    root: bool
    delta: dict[str, Any]  # a link's change, decoded from its binary link (revision 0014)
    reason_ids: list[int]
    claims_seen: int
    shared: tuple[Any, ...]  # the columns a link leaves to its version and root


def _chain(engine: Engine, version_id: UUID) -> list[_Row]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT id, seq, link, reason_refs, claims_seen, thread_id, logical_node_id, rule_set_id, "
                "grouping_algorithm_id, outcome, snapshot_sha256, manifest, delta, reason_ids, reasons "
                "FROM consolidation_evaluations WHERE node_version_id = :v ORDER BY seq"
            ),
            {"v": version_id},
        ).all()
    out = []
    for r in rows:
        # Every row since revision 0014 is compact: binary link, reasons by id, nothing in JSON
        assert r.link is not None and (r.manifest, r.delta, r.reason_ids, r.reasons, r.snapshot_sha256) == (
            (None,) * 5
        )
        root, change = chain_codec.decode(r.link)
        shared = (r.thread_id, r.logical_node_id, r.rule_set_id, r.grouping_algorithm_id, r.outcome)
        out.append(
            _Row(
                r.id,
                r.seq,
                root,
                {} if root else change,
                chain_codec.reason_ids(r.reason_refs),
                r.claims_seen,
                shared,
            )
        )
    return out


def _tails(engine: Engine, version_id: UUID) -> list[tuple[UUID, int]]:
    """The chain's tail (id, seq) as council_evaluation_tail_v1 and _v2 find it."""
    with engine.connect() as conn:
        return [
            tuple(
                conn.execute(
                    text(f"SELECT id, seq FROM council_evaluation_tail_v{n}(:v)"), {"v": version_id}
                ).one()
            )
            for n in (1, 2)
        ]


def _history(engine: Engine, version_id: UUID) -> list[Any]:
    with uow_of(engine)() as tx:
        return list(tx.consolidations.history(version_id).evaluations)


def _manifests(engine: Engine, ids: list[UUID]) -> dict[UUID, dict[str, Any]]:
    with uow_of(engine)() as tx:
        return tx.consolidations.manifests(ids)


def test_every_evaluation_of_a_hot_node_replays_from_one_root(engine: Engine, owner_engine: Engine) -> None:
    # Given a node one provider keeps claiming on (never ready), evaluated after every claim
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    direct: dict[UUID, dict[str, Any]] = {}
    reasons: dict[UUID, list[Any]] = {}
    for i in range(chain.ROOT_EVERY + 3):
        ledger.claim(
            ledger.run("anthropic"), version_id, cites=[ledger.evidence[i % 3]] if i % 5 == 0 else []
        )
        if i % 7 == 3:  # now and then the committer has not kept the tail: it walks the chain
            evaluation_chains.TAILS.clear()
        result = consolidate(uow_of(engine), version_id, actor=ACTOR)
        assert result.outcome == "not_ready" and result.evaluation_id is not None
        reasons[result.evaluation_id] = [r.model_dump() for r in result.reasons]
        with unit_of_work(engine) as conn:
            direct[result.evaluation_id] = chain.normal(manifest_of(current_snapshot(pq(conn), version_id)))
        # And the tail the committer and the sweep ask for is the row just written, by
        # bisection (revision 0017) as by probing all 64 ids (0014), at every length
        assert _tails(engine, version_id) == [(result.evaluation_id, i)] * 2
    # Then the evaluations form one chain: seq 0.., a root at 0, links after it
    rows = _chain(engine, version_id)
    assert [r.seq for r in rows] == list(range(chain.ROOT_EVERY + 3))
    assert [r.seq for r in rows if r.root] == [0]
    # And a link stores only what changed: one claim, one run (and its reasons by reference),
    # leaving the columns it shares with its chain to its version and root
    link = rows[1]
    assert set(link.delta) <= {"+c", "+r", "+t", "+e", "-e", "#"} and len(link.delta["+c"]) == 1
    assert all(len(h) == 2 * chain_codec.LINK_HASH_BYTES for h in link.delta["#"].values())
    assert link.reason_ids and rows[0].reason_ids and link.shared == (None,) * 5
    assert None not in rows[0].shared and rows[0].shared[4] == "not_ready"
    # And each row's id is its place in the chain
    with engine.connect() as conn:
        derived = conn.execute(
            text("SELECT council_evaluation_id_v1(:v, s) FROM generate_series(0, :n) s ORDER BY s"),
            {"v": version_id, "n": len(rows) - 1},
        ).scalars()
        assert list(derived) == [r.id for r in rows]
    assert [r.claims_seen for r in rows] == list(range(1, chain.ROOT_EVERY + 4))
    # And every evaluation's manifest rebuilds to what was read directly, in any order
    ids = [r.id for r in rows]
    assert _manifests(engine, ids) == direct
    shuffled = ids[:]
    random.Random(19).shuffle(shuffled)
    assert _manifests(engine, shuffled[:7]) == {i: direct[i] for i in shuffled[:7]}
    assert all(_manifests(engine, [i]) == {i: direct[i]} for i in shuffled[:5])
    # And each one's reasons read back as decided: from history and from the dashboard view
    history = [e for e in _history(engine, version_id)]
    assert {e.id: [r.model_dump() for r in e.reasons] for e in history} == reasons
    with owner_engine.connect() as conn:  # the views are the dashboard's (tests/integration/test_views.py)
        viewed = dict(conn.execute(text("SELECT decision_id, reasons FROM council_v_decisions")).all())
    assert viewed == reasons
    # And every evaluation replays: same hash, same decision, no section differs
    for evaluation_id in shuffled:
        replayed = replay(uow_of(engine), evaluation_id)
        assert replayed.match is True and replayed.differences == [], evaluation_id


def test_a_root_replays_alone_and_a_consolidation_has_its_manifest(engine: Engine) -> None:
    # Given a node evaluated once not ready, then consolidated
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    ledger.claim(ledger.run("anthropic"), version_id, confidence=0.8, cites=[ledger.evidence[0]])
    first = consolidate(uow_of(engine), version_id, actor=ACTOR)
    with unit_of_work(engine) as conn:
        before = manifest_of(current_snapshot(pq(conn), version_id))
    ledger.claim(ledger.run("openai"), version_id, confidence=0.8, cites=[ledger.evidence[1]])
    committed = consolidate(uow_of(engine), version_id, actor=ACTOR)
    assert first.evaluation_id is not None and committed.consolidation_id is not None
    # Then manifests() names both, each the full manifest it was decided on
    found = _manifests(engine, [first.evaluation_id, committed.consolidation_id])
    assert chain.normal(found[first.evaluation_id]) == chain.normal(before)
    assert len(found[committed.consolidation_id]["claims"]) == 2
    assert _manifests(engine, [UUID(int=0)]) == {}


# ------------------------------------------------------- racing evaluators

RACERS = 6
CLAIMS_EACH = 4


def _claimer(url: str, thread_id: UUID, version_id: UUID, seed: int) -> Callable[[], list[UUID]]:
    """Add claims from one provider on the version and evaluate after each, racing the others."""
    engine = engine_for(url, pool_size=1)
    ledger = Ledger(engine, thread_id)
    runs = [ledger.run("anthropic", f"racer {seed}.{i}") for i in range(CLAIMS_EACH)]

    def act() -> list[UUID]:
        answers = []
        for run_id in runs:
            ledger.claim(run_id, version_id)
            result = consolidate(uow_of(engine), version_id, actor=f"racer {seed}")
            assert result.evaluation_id is not None
            answers.append(result.evaluation_id)
        return answers

    return act


def test_racing_evaluators_extend_one_chain_that_replays_exactly(engine: Engine, db_url: str) -> None:
    # Given a node that is never ready
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    # When several processes add claims on it and evaluate it after each, at once
    raced = race(
        _claimer,
        [(db_url, ledger.thread_id, version_id, i) for i in range(RACERS)],
        start_method=RACE_START_METHOD,
    )
    assert raced.errors == []
    # Then the evaluations form one gapless chain (one per distinct snapshot)
    rows = _chain(engine, version_id)
    assert [r.seq for r in rows] == list(range(len(rows)))
    assert rows[0].root and 1 < len(rows) <= RACERS * CLAIMS_EACH
    assert [r.claims_seen for r in rows] == sorted(r.claims_seen for r in rows)
    # And every answer names one of them, and every one of them replays
    answered = {e for result in raced.results for e in result}
    assert answered <= {r.id for r in rows}
    for row in rows:
        replayed = replay(uow_of(engine), row.id)
        assert replayed.match is True and replayed.differences == [], row.seq


def test_reason_refs_read_the_same_in_sql_and_python(engine: Engine) -> None:
    # The committer writes reason_refs in SQL, readers decode them in SQL (the views) and Python
    cases = [[], [1], [127, 128, 300, 16383, 16384, 2**31 - 1], list(range(1, 40, 3))]
    with engine.connect() as conn:
        for ids in cases:
            encoded, decoded = conn.execute(
                text(
                    "SELECT council_reason_refs_v1(CAST(:ids AS integer[])), "
                    "council_reason_ids_v1(council_reason_refs_v1(CAST(:ids AS integer[])))"
                ),
                {"ids": ids},
            ).one()
            assert bytes(encoded) == chain_codec.reason_refs(ids) and decoded == ids
