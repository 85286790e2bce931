"""Ledger write services against real Postgres (DESIGN §2 invariants 1-4)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, func, select, text

from council.adapters import sources
from council.errors import BadInput, NotFound
from council.ledger import branches, claims, evidence, nodes, runs, threads
from council.ledger import tables as t
from council.ledger.db import unit_of_work

ACTOR = "test"


def _thread(engine: Engine, title: str = "SQLite parity") -> dict:
    return threads.create_thread(
        engine, title=title, objective="Is SQLite parity sufficient for the production adapter?", actor=ACTOR
    )


def _count(engine: Engine, table: t.Table) -> int:
    with unit_of_work(engine) as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_same_evidence_in_two_threads_is_one_row(engine: Engine) -> None:
    # Given two threads
    first, second = _thread(engine, "one"), _thread(engine, "two")
    body = "Load test: SQLite loses writes under 8 concurrent writers."
    # When the same text is added to both
    a = evidence.add_evidence(
        engine, thread_id=first["id"], source=sources.from_text(body), title=None, actor=ACTOR
    )
    b = evidence.add_evidence(
        engine, thread_id=second["id"], source=sources.from_text(body), title="B", actor=ACTOR
    )
    # Then there is one evidence row, linked to both threads
    assert a["id"] == b["id"] and a["sha256"] == b["sha256"]
    assert a["new_content"] is True and b["new_content"] is False
    assert _count(engine, t.evidence) == 1
    assert _count(engine, t.thread_evidence) == 2
    shown = evidence.show_evidence(engine, a["id"])
    assert {row["thread_id"] for row in shown["threads"]} == {first["id"], second["id"]}
    # And adding it again to the same thread is harmless
    again = evidence.add_evidence(
        engine, thread_id=first["id"], source=sources.from_text(body), title=None, actor=ACTOR
    )
    assert again["already_in_thread"] is True and _count(engine, t.thread_evidence) == 2


def test_interpretation_is_branch_local(engine: Engine) -> None:
    # Given one evidence item cited on two branches with different readings
    thread = _thread(engine)
    ev = evidence.add_evidence(
        engine, thread_id=thread["id"], source=sources.from_text("p99 latency 40 ms"), title=None, actor=ACTOR
    )
    fork = branches.fork(
        engine,
        thread_id=thread["id"],
        kind="node",
        label="alt",
        divergence_type="evidence_interpretation",
        fork_version_id=nodes.add_node(engine, thread_id=thread["id"], content="root", actor=ACTOR)[
            "version_id"
        ],
        actor=ACTOR,
    )
    main_node = nodes.add_node(
        engine,
        thread_id=thread["id"],
        content="fast enough",
        cites=[ev["id"]],
        interpretation="well under SLO",
        actor=ACTOR,
    )
    alt_node = nodes.add_node(
        engine,
        thread_id=thread["id"],
        branch_id=fork["id"],
        content="too slow",
        cites=[ev["id"]],
        citation_role="contradicts",
        interpretation="tail latency matters",
        actor=ACTOR,
    )
    # Then the evidence is one row and each citation keeps its own role and reading
    with unit_of_work(engine) as conn:
        rows = conn.execute(
            select(t.citations.c.branch_id, t.citations.c.role, t.citations.c.interpretation).order_by(
                t.citations.c.created_at
            )
        ).all()
    assert [(r.role, r.interpretation) for r in rows] == [
        ("supports", "well under SLO"),
        ("contradicts", "tail latency matters"),
    ]
    assert (
        rows[0].branch_id == main_node["branch_id"]
        and rows[1].branch_id == alt_node["branch_id"] == fork["id"]
    )
    assert _count(engine, t.evidence) == 1


def test_new_version_moves_head_and_keeps_old(engine: Engine) -> None:
    thread = _thread(engine)
    first = nodes.add_node(engine, thread_id=thread["id"], content="v1 text", actor=ACTOR)
    second = nodes.add_version(
        engine, logical_node_id=first["logical_node_id"], content="v2 text", actor=ACTOR
    )
    assert second["version_no"] == 2
    with unit_of_work(engine) as conn:
        head = conn.execute(
            select(t.logical_nodes.c.head_version_id).where(t.logical_nodes.c.id == first["logical_node_id"])
        ).scalar_one()
        contents = conn.execute(
            select(t.node_versions.c.content).order_by(t.node_versions.c.version_no)
        ).scalars()
        assert head == second["version_id"]
        assert list(contents) == ["v1 text", "v2 text"]
    assert nodes.show_version(engine, second["version_id"])["parent_version_id"] == first["version_id"]


def test_depends_on_edges_and_status_moves(engine: Engine) -> None:
    thread = _thread(engine)
    base = nodes.add_node(engine, thread_id=thread["id"], content="adapter passes suite", actor=ACTOR)
    top = nodes.add_node(
        engine,
        thread_id=thread["id"],
        content="ship it",
        depends_on=[base["version_id"]],
        status="tentative",
        actor=ACTOR,
    )
    shown = nodes.show_version(engine, top["version_id"])
    assert [(e["kind"], e["to_version_id"]) for e in shown["edges_out"]] == [
        ("depends_on", base["version_id"])
    ]
    assert shown["status"] == "tentative"
    # Killing appends a transition; resolving by hand is refused (only the committer resolves)
    nodes.set_status(
        engine, version_id=top["version_id"], status="killed", reason="superseded plan", actor=ACTOR
    )
    with pytest.raises(BadInput):
        nodes.set_status(engine, version_id=base["version_id"], status="resolved", reason="x", actor=ACTOR)
    history = nodes.show_version(engine, top["version_id"])["status_history"]
    assert [(h["from_status"], h["to_status"]) for h in history] == [("tentative", "killed")]


def test_run_lineage_and_claims(engine: Engine) -> None:
    thread = _thread(engine)
    ev = evidence.add_evidence(
        engine, thread_id=thread["id"], source=sources.from_text("doc"), title=None, actor=ACTOR
    )
    node = nodes.add_node(engine, thread_id=thread["id"], content="claim text", actor=ACTOR)
    parent = runs.record_run(
        engine, thread_id=thread["id"], agent="claude", model="claude-sonnet-4-6", actor=ACTOR
    )
    child = runs.record_run(
        engine,
        thread_id=thread["id"],
        agent="codex",
        model="gpt-5.5",
        parent_run_id=parent["id"],
        exposed_to=[parent["id"]],
        round_no=2,
        actor=ACTOR,
    )
    assert (parent["provider"], child["provider"]) == ("anthropic", "openai")
    made = claims.add_claim(
        engine,
        run_id=child["id"],
        version_id=node["version_id"],
        claim_type="dispute",
        confidence=0.7,
        rationale="tail latency",
        cites=[ev["id"]],
        actor=ACTOR,
    )
    shown = runs.show_run(engine, child["id"])
    assert shown["parent_run_id"] == parent["id"] and shown["round"] == 2
    assert [(x["kind"], x["channel"], x["exposed_to_run_id"]) for x in shown["exposures"]] == [
        ("stance", "explicit", parent["id"])
    ]
    assert [c["id"] for c in shown["claims"]] == [made["id"]]
    assert runs.show_run(engine, parent["id"])["children"] == [child["id"]]
    with unit_of_work(engine) as conn:
        role = conn.execute(
            select(t.citations.c.role).where(t.citations.c.claim_id == made["id"])
        ).scalar_one()
    assert role == "contradicts"
    # A run claims once per version
    with pytest.raises(BadInput):
        claims.add_claim(
            engine, run_id=child["id"], version_id=node["version_id"], claim_type="endorse", actor=ACTOR
        )


def test_node_made_by_a_run_is_originated_by_it(engine: Engine) -> None:
    thread = _thread(engine)
    run = runs.record_run(engine, thread_id=thread["id"], agent="glm", model="glm-4.6", actor=ACTOR)
    node = nodes.add_node(engine, thread_id=thread["id"], content="an idea", run_id=run["id"], actor=ACTOR)
    with unit_of_work(engine) as conn:
        claim = (
            conn.execute(select(t.claims).where(t.claims.c.id == node["originate_claim_id"])).mappings().one()
        )
    assert (claim["run_id"], claim["claim_type"]) == (run["id"], "originate")


def test_merge_and_close_branches(engine: Engine) -> None:
    thread = _thread(engine)
    root = nodes.add_node(engine, thread_id=thread["id"], content="root", actor=ACTOR)
    objective = branches.fork(
        engine,
        thread_id=thread["id"],
        kind="objective",
        label="ops scope",
        divergence_type="objective",
        objective="Is SQLite enough for single-node deployments only?",
        actor=ACTOR,
    )
    alt = branches.fork(
        engine,
        thread_id=thread["id"],
        kind="node",
        label="alt",
        divergence_type="claim",
        fork_version_id=root["version_id"],
        actor=ACTOR,
    )
    merged = branches.merge(engine, source_branch_id=alt["id"], rationale="same conclusion", actor=ACTOR)
    closed = branches.close(
        engine, branch_id=objective["id"], status="killed", reason="out of scope", actor=ACTOR
    )
    states = {b["id"]: b["status"] for b in branches.list_branches(engine, thread["id"])}
    assert (
        states[alt["id"]] == "merged" and states[objective["id"]] == "killed" and closed["status"] == "killed"
    )
    assert merged["target_branch_id"] == thread["main_branch_id"]
    with pytest.raises(BadInput):
        branches.merge(engine, source_branch_id=alt["id"], rationale="again", actor=ACTOR)
    with pytest.raises(BadInput):
        nodes.add_node(engine, thread_id=thread["id"], branch_id=alt["id"], content="late", actor=ACTOR)


def _all_counts(engine: Engine) -> dict[str, int]:
    with unit_of_work(engine) as conn:
        return {
            name: int(conn.execute(text(f'SELECT count(*) FROM "{name}"')).scalar_one())
            for name in t.metadata.tables
        }


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
def test_invalid_input_writes_nothing(engine: Engine, case: str) -> None:
    # Given a ledger with some rows
    thread = _thread(engine)
    other = _thread(engine, "other")
    node = nodes.add_node(engine, thread_id=thread["id"], content="n", actor=ACTOR)
    foreign = nodes.add_node(engine, thread_id=other["id"], content="f", actor=ACTOR)
    run = runs.record_run(engine, thread_id=thread["id"], agent="a", model="m", actor=ACTOR)
    foreign_ev = evidence.add_evidence(
        engine, thread_id=other["id"], source=sources.from_text("elsewhere"), title=None, actor=ACTOR
    )
    import uuid

    missing = uuid.uuid4()
    attempts = {
        "unknown thread": lambda: nodes.add_node(engine, thread_id=missing, content="x", actor=ACTOR),
        "empty content": lambda: nodes.add_node(engine, thread_id=thread["id"], content="   ", actor=ACTOR),
        "invalid status": lambda: nodes.add_node(
            engine, thread_id=thread["id"], content="x", status="resolved", actor=ACTOR
        ),
        "unknown dependency": lambda: nodes.add_node(
            engine, thread_id=thread["id"], content="x", depends_on=[missing], actor=ACTOR
        ),
        "dependency in another thread": lambda: nodes.add_node(
            engine, thread_id=thread["id"], content="x", depends_on=[foreign["version_id"]], actor=ACTOR
        ),
        "evidence not in thread": lambda: nodes.add_node(
            engine, thread_id=thread["id"], content="x", cites=[foreign_ev["id"]], actor=ACTOR
        ),
        "oversize content": lambda: nodes.add_node(
            engine, thread_id=thread["id"], content="x" * 20_001, actor=ACTOR
        ),
        "unknown parent run": lambda: runs.record_run(
            engine, thread_id=thread["id"], agent="a", model="m", parent_run_id=missing, actor=ACTOR
        ),
        "confidence out of range": lambda: claims.add_claim(
            engine,
            run_id=run["id"],
            version_id=node["version_id"],
            claim_type="endorse",
            confidence=1.5,
            actor=ACTOR,
        ),
        "bad claim type": lambda: claims.add_claim(
            engine, run_id=run["id"], version_id=node["version_id"], claim_type="agree", actor=ACTOR
        ),
        "claim across threads": lambda: claims.add_claim(
            engine, run_id=run["id"], version_id=foreign["version_id"], claim_type="endorse", actor=ACTOR
        ),
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
