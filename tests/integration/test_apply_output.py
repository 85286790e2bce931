"""Applying an agent output to the ledger (docs/architecture.md §7) against real Postgres:
everything is checked before anything is written, then written in one
transaction; every bad output in tests/data/bad_outputs/ writes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from pydantic import ValidationError
from sqlalchemy import Engine

from council.domain.agent_output import AgentOutput, CitationOut, ClaimOut, NewEvidence
from council.domain.commands import NewVersion
from council.domain.results.runs import Applied
from council.errors import BadInput
from council.ledger.apply_output import check_output
from council.services.nodes import add_version
from council.services.runs import close_run
from tests.builders import ACTOR, Ledger
from tests.engines import pq, unit_of_work, uow_of
from tests.rows import counts, row, rows

CORPUS = Path(__file__).resolve().parent.parent / "data" / "bad_outputs"

# What each bad output must be refused for (a fragment of its one-line reason).
EXPECTED = {
    "not_json.txt": "Invalid JSON",
    "truncated_json.txt": "Invalid JSON",
    "not_an_object.json": "Input should be an object",
    "unknown_top_level_field.json": "verdict: Extra inputs are not permitted",
    "claim_type_agree.json": "claims.0.type: Input should be 'endorse', 'dispute' or 'abstain'",
    "confidence_over_one.json": "claims.0.confidence: Input should be less than or equal to 1",
    "rationale_over_limit.json": "claims.0.rationale: String should have at most 4000 characters",
    "too_many_claims.json": "claims: List should have at most 50 items",
    "too_many_citations.json": "claims.0.cites: List should have at most 10 items",
    "claim_unknown_version.json": "claims: no node version with id 00000000-0000-4000-8000-00000000dead",
    "claim_malformed_id.json": "claims[0].node_version_id: malformed node version id: 'node-42'",
    "claim_foreign_version.json": "belongs to another thread",
    "claim_on_own_new_node.json": "claims[0].node_version_id: ref:mine is a new node of this output",
    "claim_on_version_run_created.json": "was created by this run",
    "claim_already_made.json": "this run already claimed (endorse) on node version",
    "claim_same_version_twice.json": "claims[1].node_version_id: a second claim on node version",
    "citation_both_sources.json": "a citation names exactly one of evidence_id or new_evidence",
    "citation_unknown_evidence.json": "claims[0].cites: no evidence 00000000-0000-4000-8000-00000000dead",
    "citation_foreign_evidence.json": "new_nodes[0].cites: no evidence",
    "edge_unknown_ref.json": "new_nodes[0].edges[0]: no new node in this output has ref 'missing'",
    "edge_unknown_version.json": "new_versions[0].edges: no node version with id",
    "edge_cycle.json": "new_nodes: edges between new nodes form a cycle",
    "duplicate_new_node_refs.json": "new node refs must be unique",
    "new_node_unknown_branch.json": "new_nodes[0].branch_id: no branch with id",
    "version_unknown_logical_node.json": "new_versions[0].logical_node_id: no logical node with id",
    "node_fork_without_version.json": "forks[0]: a node fork needs at_version_id",
    "objective_fork_without_objective.json": "forks[0]: an objective fork needs an objective",
    "objective_over_ledger_limit.json": "forks[0]: objective is too long",
    "fork_at_foreign_version.json": "forks[0]: node version",
    "action_unknown_version.json": "pending_actions[0].node_version_id: no node version with id",
    "nul_in_content.json": "new_nodes[0].content: contains a NUL character",
    "new_evidence_6mib.json": "String should have at most 20000 characters",
    "edges_unknown_version.json": "edges[0].to: no node version with id 00000000-0000-4000-8000-00000000dead",
    "edges_foreign_version.json": "edges[0].to: node version",
    "edges_to_itself.json": "edges[0].to: an edge from node version",
    "edges_within_one_node.json": "are versions of one node",
    "edges_to_a_new_node.json": "edges[0].to: ends at an existing version",
    "edges_kind_depends_on.json": "edges.0.kind: Input should be 'contradicts', 'refines' or 'supports'",
    "edges_from_unknown_ref.json": "edges[0].node_version_id: no new node in this output has ref 'missing'",
}


def _run_row(engine: Engine, run_id: UUID) -> Any:
    with unit_of_work(engine) as conn:
        return row(conn, "agent_runs", "id = :v", v=run_id)


def _apply(engine: Engine, run_id: UUID, document: dict[str, Any]) -> Applied:
    run = _run_row(engine, run_id)
    with uow_of(engine)() as tx:  # the writer holds the run: it fences it first, as a worker does
        assert tx.runs.fence(run_id, run["attempt"]) is not None
        return tx.outputs.apply(run, AgentOutput.model_validate(document), actor=ACTOR)


def _row_counts(engine: Engine) -> dict[str, int]:
    with unit_of_work(engine) as conn:
        return counts(conn)


def test_a_valid_output_writes_everything_in_one_go(engine: Engine) -> None:
    # Given a thread with three nodes and a run
    ledger = Ledger.new(engine)
    head = ledger.node("SQLite parity is sufficient for tests")
    other = ledger.node("Postgres is required in production")
    third = ledger.node("WAL mode removes the lock contention")
    run_id = ledger.run("anthropic")
    head_id, third_id = head["version_id"], third["version_id"]
    # When the run's output (a new node depending on a later one via ref:, a new
    # version, two cited claims, a node fork and a pending action) is applied
    result = _apply(
        engine,
        run_id,
        {
            "summary": "Parity holds for semantics, not for concurrency.",
            "new_nodes": [
                {
                    "ref": "load",
                    "content": "Under 8 concurrent writers SQLite loses writes",
                    "edges": [
                        {"kind": "contradicts", "to": str(head_id)},
                        {"kind": "depends_on", "to": "ref:bench"},
                    ],
                    "cites": [{"evidence_id": str(ledger.evidence[0]), "interpretation": "writers collide"}],
                },
                {"ref": "bench", "content": "The load benchmark is representative", "status": "tentative"},
            ],
            "new_versions": [
                {
                    "logical_node_id": str(other["logical_node_id"]),
                    "content": "Postgres is required in production for concurrent writers",
                    "edges": [{"kind": "refines", "to": "ref:load"}],
                }
            ],
            "claims": [
                {
                    "node_version_id": str(head_id),
                    "type": "dispute",
                    "confidence": 0.7,
                    "rationale": "Concurrency is out of parity.",
                    "cites": [
                        {
                            "evidence_id": str(ledger.evidence[1]),
                            "role": "contradicts",
                            "interpretation": "lost writes at 8 writers",
                        }
                    ],
                },
                {
                    "node_version_id": str(third_id),
                    "type": "endorse",
                    "confidence": 0.6,
                    "cites": [
                        {
                            "new_evidence": {
                                "title": "WAL bench",
                                "content": "WAL mode: 3x write throughput",
                            },
                            "role": "method",
                            "interpretation": "the bench used WAL",
                        }
                    ],
                },
            ],
            "forks": [
                {
                    "kind": "node",
                    "label": "concurrency reading",
                    "divergence_type": "claim",
                    "at_version_id": str(head_id),
                }
            ],
            "pending_actions": [
                {
                    "description": "Run the 8-writer load test against Postgres",
                    "acceptance_condition": "no lost writes in 10 runs",
                    "node_version_id": str(head_id),
                }
            ],
        },
    )
    # Then every part is written, and one event sums it up
    counts = {"claims": 2, "nodes": 2, "versions": 1, "evidence": 1, "forks": 1, "pending_actions": 1}
    assert {key: len(getattr(result, key)) for key in counts} == counts and len(result.touched_versions) == 5
    assert result.votes == []
    (summary,) = rows(engine, "events", "kind = :v", v="run.output_applied")
    assert (summary["subject_id"], summary["payload"]) == (str(run_id), {**counts, "touched_versions": 5})
    load_id, bench_id = result.nodes
    (new_version_id,) = result.versions
    # And the new nodes are originated by the run, with ref: edges resolved
    originated = rows(engine, "claims", "run_id = :v AND claim_type = :w", v=run_id, w="originate")
    assert {row["node_version_id"] for row in originated} == {load_id, bench_id}
    load_edges = rows(engine, "edges", "from_version_id = :v", v=load_id)
    assert {(e["kind"], e["to_version_id"]) for e in load_edges} == {
        ("contradicts", head_id),
        ("depends_on", bench_id),
    }
    assert all(e["created_by_run_id"] == run_id for e in load_edges)
    (load_citation,) = rows(engine, "citations", "node_version_id = :v", v=load_id)
    assert (load_citation["role"], load_citation["interpretation"]) == ("supports", "writers collide")
    assert load_citation["claim_id"] in {row["id"] for row in originated}
    # And the new version follows the old head and points at the new node
    (version,) = rows(engine, "node_versions", "id = :v", v=new_version_id)
    assert (version["version_no"], version["parent_version_id"]) == (2, other["version_id"])
    (version_edge,) = rows(engine, "edges", "from_version_id = :v", v=new_version_id)
    assert (version_edge["kind"], version_edge["to_version_id"]) == ("refines", load_id)
    # And the claims carry their citations with role and interpretation
    by_claim = {
        row["claim_id"]: row for row in rows(engine, "citations", "claim_id = ANY(:v)", v=result.claims)
    }
    dispute, endorse = (by_claim[claim_id] for claim_id in result.claims)
    assert (dispute["evidence_id"], dispute["role"], dispute["interpretation"]) == (
        ledger.evidence[1],
        "contradicts",
        "lost writes at 8 writers",
    )
    assert (endorse["evidence_id"], endorse["role"]) == (result.evidence[0], "method")
    (new_evidence,) = rows(engine, "evidence", "id = :v", v=result.evidence[0])
    assert (new_evidence["content"], new_evidence["title"]) == ("WAL mode: 3x write throughput", "WAL bench")
    # And the fork and the pending action belong to the run
    (fork,) = rows(engine, "branches", "id = :v", v=result.forks[0])
    assert (fork["kind"], fork["fork_version_id"], fork["created_by_run_id"]) == ("node", head_id, run_id)
    (action,) = rows(engine, "pending_actions", "id = :v", v=result.pending_actions[0])
    assert (action["node_version_id"], action["created_by_run_id"]) == (head_id, run_id)
    # And the touched versions are every version claimed on or created
    assert result.touched_versions == [head_id, third_id, load_id, bench_id, new_version_id]
    # And the events record each change
    kinds = {e["kind"] for e in rows(engine, "events", "thread_id = :v", v=ledger.thread_id)}
    changes = {
        "node.created",
        "node.versioned",
        "claim.added",
        "evidence.added",
        "branch.forked",
        "action.added",
    }
    assert changes <= kinds


def test_the_same_new_evidence_content_is_one_row(engine: Engine) -> None:
    # Given a thread with one node and two runs
    ledger = Ledger.new(engine, evidence_items=1)
    version_id = str(ledger.node()["version_id"])
    runs = [ledger.run("anthropic"), ledger.run("openai")]
    before = _row_counts(engine)

    def cite_new(content: str) -> dict[str, Any]:
        return {"claims": [{"node_version_id": version_id, "type": "endorse", "cites": [
            {"new_evidence": {"title": "bench", "content": content}},
            {"new_evidence": {"title": "bench again", "content": content}},
        ]}]}  # fmt: skip

    # When both runs cite the same new content (twice each)
    first = _apply(engine, runs[0], cite_new("p99 latency 40 ms at 8 writers"))
    second = _apply(engine, runs[1], cite_new("p99 latency 40 ms at 8 writers"))
    # Then it is one evidence row, linked once to the thread
    assert first.evidence == second.evidence and len(first.evidence) == 1
    after = _row_counts(engine)
    assert after["evidence"] - before["evidence"] == 1
    assert after["thread_evidence"] - before["thread_evidence"] == 1
    # When a run cites, as new content, text the thread already holds
    third = _apply(engine, ledger.run("zhipu"), cite_new("SQLite parity: evidence item 0"))
    # Then the existing row is reused
    assert third.evidence == [ledger.evidence[0]]
    assert _row_counts(engine)["evidence"] == after["evidence"]


def test_new_evidence_over_the_cap_is_refused_before_any_write(engine: Engine) -> None:
    # Given an output carrying 6 MiB of new evidence, built past the contract's own length check
    ledger = Ledger.new(engine, evidence_items=0)
    version_id = str(ledger.node()["version_id"])
    huge = NewEvidence.model_construct(title="dump", content="x" * (6 * 1024 * 1024))
    output = AgentOutput(
        claims=[ClaimOut(node_version_id=version_id, type="endorse", cites=[CitationOut(new_evidence=huge)])]
    )
    run = _run_row(engine, ledger.run())
    before = _row_counts(engine)
    # When it is checked, Then the 5 MiB cap refuses it and nothing is written
    with (
        unit_of_work(engine) as conn,
        pytest.raises(BadInput, match=r"claims\[0\]\.cites\[0\]: evidence is too large"),
    ):
        check_output(pq(conn), run, output)
    assert _row_counts(engine) == before


def test_every_bad_output_is_listed_with_its_reason() -> None:
    assert sorted(p.name for p in CORPUS.iterdir() if p.name != "README.md") == sorted(EXPECTED)
    readme = (CORPUS / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_bad_output_fails_with_one_line_and_writes_nothing(engine: Engine, name: str) -> None:
    # Given a ledger the placeholders are filled from, and a run in it
    ledger = Ledger.new(engine)
    head = ledger.node("SQLite parity is sufficient for tests")
    run_id = ledger.open_run("anthropic")  # closed below, once it has written its version
    claimed = ledger.node("WAL mode removes the lock contention")["version_id"]
    ledger.claim(run_id, claimed)
    own = ledger.node("Postgres is required in production")
    run_version = add_version(
        uow_of(engine),
        NewVersion(logical_node=own["logical_node_id"], content="Postgres is required", run=run_id),
        actor=ACTOR,
    ).version_id
    close_run(ledger.uow, run_id, actor=ACTOR)
    other = Ledger.new(engine, title="another question", evidence_items=0)
    values = {
        "version": head["version_id"],
        "version_upper": str(head["version_id"]).upper(),
        "logical_node": head["logical_node_id"],
        "evidence": ledger.evidence[0],
        "foreign_version": other.node("elsewhere")["version_id"],
        "foreign_evidence": other.add_evidence("only in the other thread"),
        "claimed_version": claimed,
        "run_version": run_version,
        "own_version": own["version_id"],
        "6MiB": "x" * (6 * 1024 * 1024),
    }
    text = (CORPUS / name).read_text()
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", str(value))
    assert "{{" not in text, f"{name} has an unknown placeholder"
    run = _run_row(engine, run_id)
    before = _row_counts(engine)
    # When it is parsed, checked and (were it to pass) applied
    try:
        output = AgentOutput.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        reason = f"{where}: {first['msg']}" if where else str(first["msg"])
    else:
        with unit_of_work(engine) as conn, pytest.raises(BadInput) as checked:
            check_output(pq(conn), run, output)
        with pytest.raises(BadInput) as applied, uow_of(engine)() as tx:
            tx.outputs.apply(run, output, actor=ACTOR)
        reason = str(checked.value)
        assert str(applied.value) == reason
    # Then it fails with one line that says why, and nothing was written
    assert "\n" not in reason and len(reason) < 500, reason
    assert EXPECTED[name] in reason, reason
    assert _row_counts(engine) == before
