"""Revision 0014 migrates evaluation chains written under 0013: they keep their rows and
replay as before, and each version's chain continues in the compact layout (a root after
the 0013 tail), with history, the dashboard view, idempotency and the sweep's tail
reading both layouts (docs/architecture.md §4)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from psycopg.rows import dict_row
from sqlalchemy import Engine, text

from council.domain import manifests as chain
from council.domain.canonical import canonical_sha256
from council.domain.results.threads import ReviewSetting
from council.domain.review import Review
from council.domain.rules import evaluate
from council.domain.snapshot import manifest_of, snapshot_digests
from council.ledger.migrate import upgrade
from council.ledger.review import ReviewStore, shown
from council.ledger.snapshots import current_snapshot
from council.services.consolidation import consolidate, history, replay
from tests.builders import ACTOR, Ledger
from tests.engines import dispose_all, engine_for, pq, unit_of_work, uow_of
from tests.migrations.schema_dump import create_database, drop_database, role_url, unique_name

STAND_IN_SET = """
CREATE FUNCTION council_alternative_set_v1(logical_node_id uuid) RETURNS SETOF uuid
    LANGUAGE sql STABLE AS $$ SELECT $1 $$;
GRANT EXECUTE ON FUNCTION council_alternative_set_v1(uuid) TO council_app;
"""
# The snapshot queries call functions of revision 0044: under 0013 the same definitions stand
# in (the migration's text up to the committer's own functions), dropped before the upgrade.
SNAPSHOT_FUNCTIONS = (
    "council_snapshot_manifests_v1(uuid[])",
    "council_resolved_error_sums_v1(text[])",
    "council_resolved_errors_of_v1(text[], uuid[])",
    "council_snapshot_rows_v1(jsonb)",
    "council_snapshot_rival_rows_v1(jsonb)",
)


def _snapshot_functions() -> str:
    migration = Path(__file__).parents[2] / "migrations/versions/0044_evaluation_functions.sql"
    # Checked when called, not now: the error sums read tables 0013 lacks, and 0013 never calls them.
    functions = migration.read_text().split("-- Shared locks on evidence keys")[0]
    return "SET LOCAL check_function_bodies = off;\n" + functions


INSERT_0013 = """
INSERT INTO consolidation_evaluations (thread_id, logical_node_id, node_version_id, rule_set_id,
    grouping_algorithm_id, snapshot_sha256, outcome, reasons, reason_ids, seq, manifest, section_sha256,
    delta, claims_seen)
VALUES (:thread_id, :logical_node_id, :version_id, :rule_set_id, :grouping_algorithm_id, :digest, 'not_ready',
        CAST(:reasons AS jsonb), CAST(:reason_ids AS integer[]), :seq, CAST(:manifest AS jsonb),
        CAST(:sections AS jsonb), CAST(:delta AS jsonb), :claims_seen)
RETURNING id
"""


@pytest.fixture
def at_0013(pg_server_url: str) -> Iterator[tuple[str, str]]:
    """A fresh database migrated to revision 0013 only: (owner URL, application URL)."""
    name = unique_name("council_0013")
    url = create_database(pg_server_url, name)
    try:
        upgrade(url, "0013")
        yield url, role_url(url, "council_app")
    finally:
        dispose_all()
        drop_database(pg_server_url, name)


def _record_as_0013(owner: Engine, version_id: UUID, before: Any) -> tuple[UUID, Any]:
    """Record the version's evaluation the way the 0013 committer did: a root with its
    manifest and inline reasons, or a JSON delta with its reasons by id."""
    with unit_of_work(owner) as conn:
        snapshot = current_snapshot(pq(conn), version_id)
        digest, sections = snapshot_digests(snapshot)
        manifest = manifest_of(snapshot)
        reasons = [r.as_dict() for r in evaluate(snapshot).reasons]
        seq = 0 if before is None else before[0] + 1
        reason_ids = None
        if before is not None:
            conn.execute(
                text(
                    "INSERT INTO decision_reasons (sha256, reason) SELECT x.h, x.r FROM "
                    "jsonb_to_recordset(CAST(:rs AS jsonb)) x(h text, r jsonb) ON CONFLICT DO NOTHING"
                ),
                {"rs": json.dumps([{"h": canonical_sha256(r), "r": r} for r in reasons])},
            )
            ids = dict(conn.execute(text("SELECT sha256, id FROM decision_reasons")).all())
            reason_ids = [ids[canonical_sha256(r)] for r in reasons]
        node = snapshot["node"]
        evaluation_id = conn.execute(
            text(INSERT_0013),
            {
                "thread_id": node["thread_id"],
                "logical_node_id": node["logical_node_id"],
                "version_id": version_id,
                "rule_set_id": snapshot["rule_set"]["id"],
                "grouping_algorithm_id": snapshot["grouping"]["id"],
                "digest": digest,
                "reasons": json.dumps(reasons) if before is None else None,
                "reason_ids": reason_ids,
                "seq": seq,
                "manifest": json.dumps(manifest) if before is None else None,
                "sections": json.dumps(sections) if before is None else None,
                "delta": None
                if before is None
                else json.dumps(chain.delta(before[1], manifest, before[2], sections)),
                "claims_seen": len(manifest["claims"]),
            },
        ).scalar_one()
    return evaluation_id, (seq, manifest, sections, reasons)


def _review_setting_as_0013(
    self: ReviewStore, thread_id: UUID, review: Review, *, actor: str, reason: str = "", event: bool = True
) -> ReviewSetting:
    """A thread's review setting written the way 0013's code did: that schema has no
    reviewers column (0021 adds it), so today's writer cannot open a thread there."""
    with self._conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "INSERT INTO thread_review_settings (thread_id, review, delay_s, reason, actor) "
            "VALUES (%(t)s, %(r)s, %(d)s, %(why)s, %(a)s) RETURNING *",
            {"t": thread_id, "r": review.review, "d": review.delay_s, "why": reason, "a": actor},
        )
        row = cur.fetchone()
    assert row is not None
    return shown({**row, "agents": None})


def test_chains_written_under_0013_replay_after_0014_and_continue_compact(
    at_0013: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner_url, app_url = at_0013
    monkeypatch.setattr(ReviewStore, "set", _review_setting_as_0013)
    owner, engine = engine_for(owner_url), engine_for(app_url)
    # Today's snapshot query leaves control runs out by agent_runs.control_of (revision 0036);
    # under 0013 no run is a control, so a null column of that name stands in while the 0013
    # evaluations are recorded, and is gone before the upgrade adds the real one. It also
    # names council_alternative_set_v1 (revision 0040) for rule sets with exclusive
    # alternatives, which 0013 has none of: a stand-in (no rival) is there likewise; and a
    # writer's fence marks the run it holds (revision 0041): a stand-in function. The snapshot
    # queries' functions (revision 0044) stand in as they are.
    with owner.begin() as conn:
        conn.execute(text("ALTER TABLE agent_runs ADD COLUMN control_of uuid"))
        conn.execute(text(STAND_IN_SET))
        stand_in = "CREATE FUNCTION council_hold_v1(uuid, int) RETURNS boolean LANGUAGE sql AS 'SELECT true'"
        conn.execute(text(stand_in))
        conn.exec_driver_sql(_snapshot_functions())
    # Given a hot node whose three evaluations were chained under 0013 (a root, two links)
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    old: dict[UUID, list[Any]] = {}
    state = None
    for i in range(3):
        ledger.claim(ledger.run("anthropic"), version_id, cites=[ledger.evidence[i]])
        evaluation_id, state = _record_as_0013(owner, version_id, state)
        old[evaluation_id] = state[3]
    with owner.begin() as conn:
        conn.execute(text("ALTER TABLE agent_runs DROP COLUMN control_of"))
        conn.execute(text("DROP FUNCTION council_alternative_set_v1(uuid)"))
        conn.execute(text("DROP FUNCTION council_hold_v1(uuid, integer)"))
        conn.execute(text("DROP FUNCTION " + ", ".join(SNAPSHOT_FUNCTIONS)))
    # When the ledger is migrated to 0014
    upgrade(owner_url)
    # Then every 0013 evaluation still replays exactly
    for evaluation_id in old:
        replayed = replay(uow_of(engine), evaluation_id)
        assert replayed.match is True and replayed.differences == [], evaluation_id
    # And deciding the unchanged version again answers with the 0013 tail (idempotent)
    tail_id = list(old)[-1]
    again = consolidate(uow_of(engine), version_id, actor=ACTOR)
    assert again.outcome == "not_ready" and again.evaluation_id == tail_id
    # And new claims extend the chain in the compact layout: a root after the 0013 tail, then a link
    new = []
    for i in range(2):
        ledger.claim(ledger.run("anthropic"), version_id, cites=[ledger.evidence[i]])
        result = consolidate(uow_of(engine), version_id, actor=ACTOR)
        assert result.outcome == "not_ready" and result.evaluation_id is not None
        new.append(result)
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT seq, link IS NOT NULL AS compact, rule_set_id IS NOT NULL AS whole "
                "FROM consolidation_evaluations WHERE node_version_id = :v ORDER BY seq"
            ),
            {"v": version_id},
        ).all()
        tail = conn.execute(
            text("SELECT id, claims_seen FROM council_evaluation_tail_v1(:v)"), {"v": version_id}
        ).one()
    assert [tuple(r) for r in rows] == [
        (0, False, True),
        (1, False, True),
        (2, False, True),
        (3, True, True),
        (4, True, False),
    ]
    assert tail.id == new[-1].evaluation_id and tail.claims_seen == 5
    # And every evaluation of both layouts replays, and history and the view read them all
    for evaluation_id in [*old, *(r.evaluation_id for r in new)]:
        assert replay(uow_of(engine), evaluation_id).match is True, evaluation_id
    shown = history(uow_of(engine), version_id).evaluations
    expected = {**old, **{r.evaluation_id: [x.model_dump() for x in r.reasons] for r in new}}
    assert {e.id: [r.model_dump() for r in e.reasons] for e in shown} == expected
    assert {e.snapshot_sha256 for e in shown} >= {r.snapshot_sha256 for r in new}
    with owner.connect() as conn:
        viewed = dict(
            conn.execute(
                text("SELECT decision_id, reasons FROM council_v_decisions WHERE kind = 'evaluation'")
            ).all()
        )
    assert viewed == expected
