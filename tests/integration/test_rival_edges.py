"""An agent's contradicts edges that name no version of its thread are left out, and the rest
of its output written (issue 43; council/domain/rival_edges.py), against real Postgres: the
claims and nodes of an otherwise valid answer are kept, each dropped edge is reported in the
run.output_applied event with its place and reason, and no such edge is written. Any other
bad edge is still refused (tests/data/bad_outputs). A new node carries its originate confidence."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Engine

from council.domain.agent_output import AgentOutput
from tests.builders import ACTOR, Ledger
from tests.engines import unit_of_work
from tests.rows import row, rows

UNKNOWN = "00000000-0000-4000-8000-00000000dead"


def _apply(engine: Engine, ledger: Ledger, run_id: UUID, document: dict[str, Any]) -> Any:
    with unit_of_work(engine) as conn:
        run = row(conn, "agent_runs", "id = :v", v=run_id)
    with ledger.uow() as tx:
        assert tx.runs.fence(run_id, run["attempt"]) is not None
        return tx.outputs.apply(run, AgentOutput.model_validate(document), actor=ACTOR)


def test_contradicts_edges_to_unknown_or_foreign_versions_are_left_out_and_the_answer_kept(
    engine: Engine,
) -> None:
    # Given a proposition of the thread, one of another thread, and a run
    ledger = Ledger.new(engine, evidence_items=0)
    mine = str(ledger.node("SQLite is enough")["version_id"])
    foreign = str(Ledger.new(engine, title="other", evidence_items=0).node("elsewhere")["version_id"])
    run = ledger.open_run("anthropic")
    # When its otherwise valid output also says its new node contradicts an unknown version
    # and a foreign one, and links the existing proposition to the foreign one
    applied = _apply(
        engine,
        ledger,
        run,
        {
            "claims": [{"node_version_id": mine, "type": "dispute", "confidence": 0.7}],
            "new_nodes": [
                {
                    "ref": "pg",
                    "content": "Postgres is needed",
                    "edges": [
                        {"kind": "contradicts", "to": UNKNOWN},
                        {"kind": "contradicts", "to": mine},
                        {"kind": "contradicts", "to": foreign},
                    ],
                }
            ],
            "edges": [{"node_version_id": mine, "kind": "contradicts", "to": foreign}],
        },
    )
    # Then its claim and its node are written, with the one good edge
    assert len(applied.claims) == 1 and len(applied.nodes) == 1
    [made] = applied.nodes
    written = [
        (e["kind"], str(e["to_version_id"])) for e in rows(engine, "edges", "created_by_run_id = :v", v=run)
    ]
    assert written == [("contradicts", mine)]
    assert [str(e["from_version_id"]) for e in rows(engine, "edges", "created_by_run_id = :v", v=run)] == [
        str(made)
    ]
    # And each edge left out is reported, by its place and why, in the run's event
    [event] = rows(engine, "events", "kind = 'run.output_applied' AND subject_id = :v", v=str(run))
    assert event["payload"]["edges_dropped"] == [
        f"new_nodes[0].edges[0]: contradicts edge left out: no node version with id {UNKNOWN}",
        f"new_nodes[0].edges[2]: contradicts edge left out: node version {foreign} belongs to another thread",
        f"edges[0]: contradicts edge left out: node version {foreign} belongs to another thread",
    ]
    assert "edges" not in applied.model_dump() or applied.edges == []


def test_an_output_whose_edges_are_all_good_reports_nothing_dropped(engine: Engine) -> None:
    ledger = Ledger.new(engine, evidence_items=0)
    mine = str(ledger.node("SQLite is enough")["version_id"])
    run = ledger.open_run("anthropic")
    _apply(
        engine,
        ledger,
        run,
        {"new_nodes": [{"ref": "pg", "content": "Postgres", "edges": [{"kind": "contradicts", "to": mine}]}]},
    )
    [event] = rows(engine, "events", "kind = 'run.output_applied' AND subject_id = :v", v=str(run))
    assert "edges_dropped" not in event["payload"]


def test_a_new_node_carries_its_originate_confidence(engine: Engine) -> None:
    # Given a run whose output proposes two nodes, one with its confidence, one without
    ledger = Ledger.new(engine, evidence_items=0)
    run = ledger.open_run("anthropic")
    applied = _apply(
        engine,
        ledger,
        run,
        {
            "new_nodes": [
                {"ref": "sure", "content": "No, it fails", "confidence": 0.7},
                {"ref": "plain", "content": "x"},
            ]
        },
    )
    # Then each originate claim holds the confidence given, else 1
    found = {
        c["node_version_id"]: float(c["confidence"])
        for c in rows(engine, "claims", "run_id = :v AND claim_type = 'originate'", v=run)
    }
    assert found == {applied.nodes[0]: 0.7, applied.nodes[1]: 1.0}
    events = rows(engine, "events", "kind = 'claim.added' AND payload->>'run_id' = :v", v=str(run))
    assert sorted(e["payload"]["confidence"] for e in events) == [0.7, 1.0]
