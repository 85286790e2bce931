"""Ledger write services against real Postgres (docs/architecture.md §2 invariants 1-4)."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import Engine

from council.domain.commands import NewClaim, NewFork, NewNode, NewVersion, RecordedRun, same_reading
from council.domain.results.graph import ClaimAdded, VersionCreated
from council.domain.results.threads import ThreadCreated
from council.errors import BadInput, NotFound
from council.ledger.unit import UnitOfWork
from council.services.branches import close_branch, fork_branch, list_branches, merge_branch
from council.services.claims import add_claim
from council.services.evidence import EvidenceInput, add_evidence, show_evidence
from council.services.nodes import add_node, add_version, set_node_status, show_node
from council.services.runs import record_run, show_run
from council.services.threads import create_thread
from tests.engines import unit_of_work
from tests.rows import count, counts, query, row

ACTOR = "test"


def _thread(uow: UnitOfWork, title: str = "SQLite parity") -> ThreadCreated:
    return create_thread(
        uow, title=title, objective="Is SQLite parity sufficient for the production adapter?", actor=ACTOR
    )


def test_same_evidence_in_two_threads_is_one_row(engine: Engine, uow: UnitOfWork) -> None:
    # Given two threads
    first, second = _thread(uow, "one"), _thread(uow, "two")
    body = "Load test: SQLite loses writes under 8 concurrent writers."
    # When the same text is added to both
    a = add_evidence(uow, first.id, EvidenceInput(text=body), actor=ACTOR)
    b = add_evidence(uow, second.id, EvidenceInput(text=body, title="B"), actor=ACTOR)
    # Then there is one evidence row, linked to both threads
    assert a.id == b.id and a.sha256 == b.sha256
    assert a.new_content is True and b.new_content is False
    assert count(engine, "evidence") == 1
    assert count(engine, "thread_evidence") == 2
    shown = show_evidence(uow, a.id)
    assert {row.thread_id for row in shown.threads} == {first.id, second.id}
    # And adding it again to the same thread is harmless
    again = add_evidence(uow, first.id, EvidenceInput(text=body), actor=ACTOR)
    assert again.already_in_thread is True and count(engine, "thread_evidence") == 2


def test_interpretation_is_branch_local(engine: Engine, uow: UnitOfWork) -> None:
    # Given one evidence item cited on two branches with different readings
    thread = _thread(uow)
    ev = add_evidence(uow, thread.id, EvidenceInput(text="p99 latency 40 ms"), actor=ACTOR)
    root = add_node(uow, NewNode(thread=thread.id, content="root"), actor=ACTOR)
    fork = fork_branch(
        uow,
        NewFork(
            thread=thread.id,
            kind="node",
            label="alt",
            divergence_type="evidence_interpretation",
            at_version=root.version_id,
        ),
        actor=ACTOR,
    )
    main_node = add_node(
        uow,
        NewNode(
            thread=thread.id,
            content="fast enough",
            cites=same_reading([ev.id], interpretation="well under SLO"),
        ),
        actor=ACTOR,
    )
    alt_node = add_node(
        uow,
        NewNode(
            thread=thread.id,
            branch=fork.id,
            content="too slow",
            cites=same_reading([ev.id], "contradicts", "tail latency matters"),
        ),
        actor=ACTOR,
    )
    # Then the evidence is one row and each citation keeps its own role and reading
    with unit_of_work(engine) as conn:
        rows = [
            SimpleNamespace(**r)
            for r in query(conn, "SELECT branch_id, role, interpretation FROM citations ORDER BY created_at")
        ]
    assert [(r.role, r.interpretation) for r in rows] == [
        ("supports", "well under SLO"),
        ("contradicts", "tail latency matters"),
    ]
    assert rows[0].branch_id == main_node.branch_id and rows[1].branch_id == alt_node.branch_id == fork.id
    assert count(engine, "evidence") == 1


def test_new_version_moves_head_and_keeps_old(engine: Engine, uow: UnitOfWork) -> None:
    thread = _thread(uow)
    first = add_node(uow, NewNode(thread=thread.id, content="v1 text"), actor=ACTOR)
    second = add_version(uow, NewVersion(logical_node=first.logical_node_id, content="v2 text"), actor=ACTOR)
    assert second.version_no == 2
    with unit_of_work(engine) as conn:
        head = row(conn, "logical_nodes", "id = :v", v=first.logical_node_id)["head_version_id"]
        contents = [
            r["content"] for r in query(conn, "SELECT content FROM node_versions ORDER BY version_no")
        ]
        assert head == second.version_id
        assert list(contents) == ["v1 text", "v2 text"]
    assert show_node(uow, second.version_id).parent_version_id == first.version_id


def test_depends_on_edges_and_status_moves(uow: UnitOfWork) -> None:
    thread = _thread(uow)
    base = add_node(uow, NewNode(thread=thread.id, content="adapter passes suite"), actor=ACTOR)
    top = add_node(
        uow,
        NewNode(
            thread=thread.id,
            content="ship it",
            edges=(("depends_on", base.version_id),),
            status="tentative",
        ),
        actor=ACTOR,
    )
    shown = show_node(uow, top.version_id)
    assert [(e.kind, e.to_version_id) for e in shown.edges_out] == [("depends_on", base.version_id)]
    assert shown.status == "tentative"
    # Killing appends a transition; resolving by hand is refused (only the committer resolves)
    set_node_status(uow, top.version_id, status="killed", reason="superseded plan", actor=ACTOR)
    with pytest.raises(BadInput):
        set_node_status(uow, base.version_id, status="resolved", reason="x", actor=ACTOR)
    history = show_node(uow, top.version_id).status_history
    assert [(h.from_status, h.to_status) for h in history] == [("tentative", "killed")]


def test_run_lineage_and_claims(engine: Engine, uow: UnitOfWork) -> None:
    thread = _thread(uow)
    ev = add_evidence(uow, thread.id, EvidenceInput(text="doc"), actor=ACTOR)
    node = add_node(uow, NewNode(thread=thread.id, content="claim text"), actor=ACTOR)
    parent = record_run(
        uow, RecordedRun(thread=thread.id, agent="claude", model="claude-sonnet-4-6"), actor=ACTOR
    )
    child = record_run(
        uow,
        RecordedRun(
            thread=thread.id,
            agent="codex",
            model="gpt-5.5",
            parent_run=parent.id,
            exposed_to=(parent.id,),
            round_no=2,
        ),
        actor=ACTOR,
    )
    assert (parent.provider, child.provider) == ("anthropic", "openai")
    made = add_claim(
        uow,
        child.id,
        NewClaim(
            version=node.version_id,
            claim_type="dispute",
            confidence=0.7,
            rationale="tail latency",
            cites=same_reading([ev.id]),
        ),
        actor=ACTOR,
    )
    shown = show_run(uow, child.id)
    assert shown.parent_run_id == parent.id and shown.round == 2
    assert [(x.kind, x.channel, x.exposed_to_run_id) for x in shown.exposures] == [
        ("stance", "explicit", parent.id)
    ]
    assert [c.id for c in shown.claims] == [made.id]
    assert show_run(uow, parent.id).children == [child.id]
    with unit_of_work(engine) as conn:
        role = row(conn, "citations", "claim_id = :v", v=made.id)["role"]
    assert role == "contradicts"
    # A run claims once per version
    with pytest.raises(BadInput):
        add_claim(uow, child.id, NewClaim(version=node.version_id, claim_type="endorse"), actor=ACTOR)


def test_node_made_by_a_run_is_originated_by_it(engine: Engine, uow: UnitOfWork) -> None:
    thread = _thread(uow)
    run = record_run(uow, RecordedRun(thread=thread.id, agent="glm", model="glm-4.6"), actor=ACTOR)
    node = add_node(uow, NewNode(thread=thread.id, content="an idea", run=run.id), actor=ACTOR)
    with unit_of_work(engine) as conn:
        claim = row(conn, "claims", "id = :v", v=node.originate_claim_id)
    assert (claim["run_id"], claim["claim_type"]) == (run.id, "originate")


def test_merge_and_close_branches(uow: UnitOfWork) -> None:
    thread = _thread(uow)
    root = add_node(uow, NewNode(thread=thread.id, content="root"), actor=ACTOR)
    objective = fork_branch(
        uow,
        NewFork(
            thread=thread.id,
            kind="objective",
            label="ops scope",
            divergence_type="objective",
            objective="Is SQLite enough for single-node deployments only?",
        ),
        actor=ACTOR,
    )
    alt = fork_branch(
        uow,
        NewFork(
            thread=thread.id, kind="node", label="alt", divergence_type="claim", at_version=root.version_id
        ),
        actor=ACTOR,
    )
    merged = merge_branch(uow, alt.id, rationale="same conclusion", actor=ACTOR)
    closed = close_branch(uow, objective.id, status="killed", reason="out of scope", actor=ACTOR)
    states = {b.id: b.status for b in list_branches(uow, thread.id).items}
    assert states[alt.id] == "merged" and states[objective.id] == "killed" and closed.status == "killed"
    assert merged.target_branch_id == thread.main_branch_id
    with pytest.raises(BadInput):
        merge_branch(uow, alt.id, rationale="again", actor=ACTOR)
    with pytest.raises(BadInput):
        add_node(uow, NewNode(thread=thread.id, branch=alt.id, content="late"), actor=ACTOR)


def _all_counts(engine: Engine) -> dict[str, int]:
    with unit_of_work(engine) as conn:
        return counts(conn)


@pytest.mark.parametrize(
    "case",
    [
        "unknown thread",
        "empty content",
        "invalid status",
        "unknown dependency",
        "dependency in another thread",
        "evidence not in thread",
        "oversize content",
        "unknown parent run",
        "confidence out of range",
        "bad claim type",
        "claim across threads",
    ],
)
def test_invalid_input_writes_nothing(engine: Engine, uow: UnitOfWork, case: str) -> None:
    # Given a ledger with some rows
    thread = _thread(uow)
    other = _thread(uow, "other")
    node = add_node(uow, NewNode(thread=thread.id, content="n"), actor=ACTOR)
    foreign = add_node(uow, NewNode(thread=other.id, content="f"), actor=ACTOR)
    run = record_run(uow, RecordedRun(thread=thread.id, agent="a", model="m"), actor=ACTOR)
    foreign_ev = add_evidence(uow, other.id, EvidenceInput(text="elsewhere"), actor=ACTOR)
    missing = uuid.uuid4()

    def node_in_thread(content: str, **given: Any) -> VersionCreated:
        return add_node(uow, NewNode(thread=thread.id, content=content, **given), actor=ACTOR)

    def claim_on(version: uuid.UUID, claim_type: str, confidence: float | None = None) -> ClaimAdded:
        claim = NewClaim(version=version, claim_type=claim_type, confidence=confidence)
        return add_claim(uow, run.id, claim, actor=ACTOR)

    attempts = {
        "unknown thread": lambda: add_node(uow, NewNode(thread=missing, content="x"), actor=ACTOR),
        "empty content": lambda: node_in_thread(content="   "),
        "invalid status": lambda: node_in_thread(content="x", status="resolved"),
        "unknown dependency": lambda: node_in_thread(content="x", edges=(("depends_on", missing),)),
        "dependency in another thread": lambda: node_in_thread(
            content="x", edges=(("depends_on", foreign.version_id),)
        ),
        "evidence not in thread": lambda: node_in_thread(content="x", cites=same_reading([foreign_ev.id])),
        "oversize content": lambda: node_in_thread(content="x" * 20_001),
        "unknown parent run": lambda: record_run(
            uow, RecordedRun(thread=thread.id, agent="a", model="m", parent_run=missing), actor=ACTOR
        ),
        "confidence out of range": lambda: claim_on(node.version_id, "endorse", 1.5),
        "bad claim type": lambda: claim_on(node.version_id, "agree"),
        "claim across threads": lambda: claim_on(foreign.version_id, "endorse"),
    }
    before = _all_counts(engine)
    # When the bad write is attempted, Then it is refused as bad input
    with pytest.raises(BadInput) as raised:
        attempts[case]()
    assert "\n" not in str(raised.value)
    # And nothing at all was written
    assert _all_counts(engine) == before
    if case in {"unknown thread", "unknown dependency", "unknown parent run"}:
        assert isinstance(raised.value, NotFound)
