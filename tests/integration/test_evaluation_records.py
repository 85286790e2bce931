"""What a not-ready evaluation stores, and that it replays (docs/architecture.md §4, invariant 9).

Since revision 0005 a not-ready evaluation keeps its manifest (the ids of the
rows its snapshot was built from) and the hash of each snapshot section, not
the whole snapshot; rows written before keep their snapshot and replay as they
did. Since revision 0014 a chain's root keeps them in its binary ``link``
(council.domain.chain_codec), the hash as 32 bytes.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.domain import chain_codec
from council.domain.results.consolidation import Evaluated, Replayed
from council.domain.snapshot import manifest_of, snapshot_digests
from council.errors import BadInput
from council.ledger.snapshots import current_snapshot
from council.services.consolidation import consolidate, replay
from tests.builders import ACTOR, Ledger, alter_claims_behind_the_ledgers_back
from tests.engines import pq, unit_of_work, uow_of
from tests.rows import insert, rows


def _not_ready(engine: Engine) -> tuple[Ledger, UUID, UUID, Evaluated]:
    """A node one provider supports, decided: (ledger, version, evaluation id, result)."""
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    ledger.claim(ledger.run("anthropic"), version_id, cites=[ledger.evidence[0]])
    result = consolidate(uow_of(engine), version_id, actor=ACTOR)
    assert result.outcome == "not_ready" and result.evaluation_id is not None
    return ledger, version_id, result.evaluation_id, result


def _replay(engine: Engine, record_id: UUID) -> Replayed:
    return replay(uow_of(engine), record_id)


def _reasons(result: Evaluated) -> list[dict[str, Any]]:
    return [r.model_dump() for r in result.reasons]


def _stored(engine: Engine, evaluation_id: UUID) -> Any:
    with unit_of_work(engine) as conn:
        [found] = rows(conn, "consolidation_evaluations", "id = :v", v=evaluation_id)
        return found


def test_a_not_ready_evaluation_stores_its_manifest_and_section_hashes_not_its_snapshot(
    engine: Engine,
) -> None:
    # Given a node one provider supports (not ready)
    _, version_id, evaluation_id, result = _not_ready(engine)
    # Then the record names the rows and hashes the sections of the snapshot it was decided on
    row = _stored(engine, evaluation_id)
    with unit_of_work(engine) as conn:
        snapshot = current_snapshot(pq(conn), version_id)
    digest, sections = snapshot_digests(snapshot)
    assert row["snapshot"] is None and row["manifest"] is None
    root, change = chain_codec.decode(row["link"])
    # (its runs left to its claims: a manifest's runs are its claims')
    assert root and chain_codec.root_manifest(change) == (
        chain_codec.without_runs(manifest_of(snapshot)),
        sections,
    )
    assert row["digest"].hex() == digest == result.snapshot_sha256
    # And it replays to the same hash and decision
    replayed = _replay(engine, evaluation_id)
    assert replayed.match is True and replayed.kind == "evaluation" and replayed.differences == []


def test_replaying_an_evaluation_names_the_section_that_changed(engine: Engine, owner_engine: Engine) -> None:
    # Given a recorded not-ready evaluation
    _, version_id, evaluation_id, _ = _not_ready(engine)
    # When its claim is altered behind the ledger's back (by the owner, trigger disabled)
    alter_claims_behind_the_ledgers_back(owner_engine, version_id, confidence=0.1)
    # Then replay reports the mismatch and where it is
    replayed = _replay(engine, evaluation_id)
    assert replayed.match is False and replayed.hash_match is False
    assert replayed.differences == ["claims"]


def test_an_evaluation_recorded_with_its_whole_snapshot_still_replays(engine: Engine) -> None:
    # Given an evaluation stored the way revision 0004 stored it: the whole snapshot, no manifest
    ledger, version_id, _, result = _not_ready(engine)
    ledger.claim(ledger.run("openai"), version_id, claim_type="abstain")
    with unit_of_work(engine) as conn:
        snapshot = current_snapshot(pq(conn), version_id)
        legacy_id = insert(
            conn,
            "consolidation_evaluations",
            thread_id=ledger.thread_id,
            logical_node_id=snapshot["node"]["logical_node_id"],
            node_version_id=version_id,
            rule_set_id=snapshot["rule_set"]["id"],
            grouping_algorithm_id=snapshot["grouping"]["id"],
            snapshot_sha256=snapshot_digests(snapshot)[0],
            outcome="not_ready",
            reasons=_reasons(result),
            snapshot=snapshot,
        )["id"]
    # Then replay reads its manifest out of the snapshot and agrees
    replayed = _replay(engine, legacy_id)
    assert replayed.match is True and replayed.differences == []


def test_an_evaluation_with_neither_snapshot_nor_manifest_is_refused(engine: Engine) -> None:
    # Given a recorded evaluation
    _, _, evaluation_id, result = _not_ready(engine)
    row = dict(_stored(engine, evaluation_id))
    # When a second record of it without anything to replay from is inserted
    # Then the database refuses it
    with (
        pytest.raises(BadInput, match="consolidation_evaluations_replayable"),
        unit_of_work(engine) as conn,
    ):
        insert(
            conn,
            "consolidation_evaluations",
            **{
                k: row[k]
                for k in (
                    "thread_id",
                    "logical_node_id",
                    "node_version_id",
                    "rule_set_id",
                    "grouping_algorithm_id",
                    "outcome",
                )
            },
            reasons=_reasons(result),
            snapshot_sha256="0" * 64,
            manifest=None,
        )
