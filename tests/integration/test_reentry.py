"""The reentry packet against real Postgres (docs/architecture.md §6, invariants 6 and 7)."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from council.cli.output import fetch_command
from council.domain.commands import NewAction, NewFork
from council.domain.epistemic import lint
from council.domain.reentry import estimate_tokens
from council.domain.reentry_markdown import render_markdown
from council.ledger.lint import ledger_items
from council.ledger.unit import UnitOfWork
from council.services.branches import close_branch, fork_branch, merge_branch
from council.services.claims import add_action
from council.services.consolidation import consolidate
from council.services.nodes import set_node_status
from council.services.reentry import lint_text, reentry_packet
from tests.builders import ACTOR, Ledger
from tests.engines import pq, unit_of_work, uow_of
from tests.rows import insert


def _contest(engine: Engine, consolidation_id: UUID) -> None:
    """Move a consolidation's memory stable → provisional → contested (as reversal will)."""
    with unit_of_work(engine) as conn:
        memory_id = conn.execute(
            text("SELECT id FROM memory_items WHERE consolidation_id = :c"), {"c": consolidation_id}
        ).scalar_one()
        for old, new in (("stable", "provisional"), ("provisional", "contested")):
            insert(
                conn,
                "memory_transitions",
                memory_item_id=memory_id,
                from_status=old,
                to_status=new,
                reason="evidence fell",
                actor=ACTOR,
            )


def _scenario(engine: Engine) -> dict[str, Any]:
    uow = uow_of(engine)
    ledger = Ledger.new(engine)
    tid = ledger.thread_id
    base = ledger.node("Adapter passes the parity suite", status="tentative", cites=[ledger.evidence[0]])
    top = ledger.node("Parity is enough to ship", depends_on=[base["version_id"]])
    killed = ledger.node("SQLite handles concurrent writers")
    set_node_status(uow, killed["version_id"], status="killed", reason="load test", actor=ACTOR)
    done = ledger.ready_node("Query semantics match on PG 16")
    committed = consolidate(uow, done, actor=ACTOR)
    shaky = ledger.ready_node("WAL mode is safe for reads")
    contested = consolidate(uow, shaky, actor=ACTOR)
    assert contested.consolidation_id is not None
    _contest(engine, contested.consolidation_id)
    counter = ledger.node("Parity ignores locking", edges=[("contradicts", top["version_id"])])
    run = ledger.run("zhipu")
    ledger.claim(
        run, top["version_id"], claim_type="dispute", confidence=0.9, rationale="tail latency differs"
    )
    alt = fork_branch(
        uow,
        NewFork(
            thread=tid,
            kind="node",
            label="pg-only",
            divergence_type="evidence_interpretation",
            at_version=top["version_id"],
        ),
        actor=ACTOR,
    )
    alt_node = ledger.node("Only Postgres tests count", branch_id=alt.id)
    dead = fork_branch(
        uow,
        NewFork(
            thread=tid, kind="node", label="mysql", divergence_type="claim", at_version=base["version_id"]
        ),
        actor=ACTOR,
    )
    dead_node = ledger.node("MySQL parity instead", branch_id=dead.id)
    close_branch(uow, dead.id, status="killed", reason="out of scope", actor=ACTOR)
    action = add_action(
        uow,
        NewAction(
            thread=tid,
            description="Run the adapter suite on PG 16",
            acceptance_condition="suite green on PG 16",
            version=top["version_id"],
        ),
        actor=ACTOR,
    )
    fork = fork_branch(
        uow,
        NewFork(
            thread=tid,
            kind="objective",
            label="scope",
            divergence_type="objective",
            objective="Ship only for single-node deployments?",
        ),
        actor=ACTOR,
    )
    return locals()


def test_packet_contains_the_frontier_and_omits_what_is_decided(engine: Engine, uow: UnitOfWork) -> None:
    s = _scenario(engine)
    packet = reentry_packet(uow, s["tid"], budget=20_000)
    heads = {h.version_id: h for h in packet.heads}
    # Open and tentative heads on live branches, and nothing else
    assert set(heads) == {
        str(s["base"]["version_id"]),
        str(s["top"]["version_id"]),
        str(s["counter"]["version_id"]),
        str(s["alt_node"]["version_id"]),
    }
    assert packet.head_count == 4 and packet.left_out == []
    assert heads[str(s["base"]["version_id"])].status == "tentative"
    # The dependency chain, counterarguments (node and dispute with rationale), the pending action
    assert [(d.root, d.version_id) for d in packet.dependencies] == [
        (str(s["top"]["version_id"]), str(s["base"]["version_id"]))
    ]
    kinds = {(c.kind, c.target) for c in packet.counterarguments}
    assert kinds == {
        ("contradicting_node", str(s["top"]["version_id"])),
        ("dispute", str(s["top"]["version_id"])),
    }
    assert [c.rationale for c in packet.counterarguments if c.kind == "dispute"] == ["tail latency differs"]
    assert [a.id for a in packet.actions] == [str(s["action"].id)]
    # Every evidence item of the thread, as references only: the cited one first, with what cites it
    assert {e.id for e in packet.evidence} == {str(e) for e in s["ledger"].evidence}
    assert packet.evidence[0].id == str(s["ledger"].evidence[0]) and packet.evidence[0].cited_by
    assert all(not e.cited_by for e in packet.evidence[1:])
    assert "content" not in packet.evidence[0].model_dump()
    # The unresolved objective fork, branch topology with the killed branch and its reason
    assert [b.label for b in packet.objective_forks] == ["scope"]
    states = {b.label: (b.status, b.killed_reason) for b in packet.branches}
    assert states["mysql"] == ("killed", "out of scope") and states["pg-only"] == ("active", None)
    # Memory: the stable and the contested items
    memory = {m.node_version_id: m.status for m in packet.memory}
    assert memory == {str(s["done"]): "stable", str(s["shaky"]): "contested"}
    markdown = render_markdown(packet)
    assert "MySQL parity instead" not in markdown  # a killed branch is one line, its nodes are not shown
    assert "SQLite handles concurrent writers" not in markdown  # killed node: not on the frontier
    assert "'pg-only'" in markdown and "active, not merged" in markdown
    with unit_of_work(engine) as conn:
        assert lint(markdown, ledger_items(pq(conn), s["tid"])) == []


def test_blind_packet_redacts_stances(engine: Engine, uow: UnitOfWork) -> None:
    s = _scenario(engine)
    packet = reentry_packet(uow, s["tid"], budget=20_000, blind=True)
    assert packet.blind and all(c.kind == "contradicting_node" for c in packet.counterarguments)
    assert all(h.support_claims is None and h.dispute_claims is None for h in packet.heads)
    dumped = json.dumps(packet.model_dump(mode="json"))
    assert "tail latency differs" not in dumped and "zhipu" not in dumped


def test_small_budget_cuts_by_priority_and_says_what_was_left_out(engine: Engine, uow: UnitOfWork) -> None:
    s = _scenario(engine)
    packet = reentry_packet(uow, s["tid"], budget=600)
    assert packet.estimated_tokens <= 600
    assert estimate_tokens(packet.model_dump(mode="json")) <= 600
    left = {item.section: item for item in packet.left_out}
    assert len(packet.heads) + (left["heads"].count if "heads" in left else 0) == packet.head_count == 4
    assert [b.label for b in packet.objective_forks] == ["scope"]  # never cut
    # Each left-out section says where it can be read: as the CLI words it, a command for this thread or an id
    hints = [fetch_command(str(s["tid"]), item.fetch) for item in packet.left_out]
    assert all(f"--thread {s['tid']}" in hint or "ID" in hint for hint in hints)
    assert "## Left out (over budget)" in render_markdown(packet)


def test_lint_catches_concluded_until_the_node_is_consolidated(
    engine: Engine, uow: UnitOfWork, cli: Any, tmp_path: Any
) -> None:
    ledger = Ledger.new(engine)
    version_id = ledger.ready_node("SQLite parity is sufficient for the production adapter")
    note = tmp_path / "summary.md"
    note.write_text("The council concluded that SQLite parity is sufficient for the production adapter.\n")
    before = cli("lint", str(note), "--thread", str(ledger.thread_id), "--json")
    assert before.code == 1
    finding = before.json()["findings"][0]
    assert finding["word"] == "concluded" and finding["item_id"] == str(version_id)
    consolidate(uow, version_id, actor=ACTOR)
    after = cli("lint", str(note), "--thread", str(ledger.thread_id), "--json")
    assert after.code == 0 and after.json() == {"findings": [], "ok": True}
    assert lint_text(uow, ledger.thread_id, "We set aside the SQLite idea.").findings[0].item_id is None


def test_reentry_cli_formats_and_bad_input(engine: Engine, cli: Any) -> None:
    ledger = Ledger.new(engine)
    ledger.node("An open question about WAL")
    tid = str(ledger.thread_id)
    markdown = cli("reentry", "--thread", tid)
    assert markdown.code == 0 and markdown.stdout.startswith("# Reentry packet: ")
    as_json = cli("reentry", "--thread", tid, "--format", "json").json()
    assert as_json["format"] == "council-reentry-v1" and as_json["head_count"] == 1
    assert cli("reentry", "--thread", tid, "--json").json() == as_json | {
        "high_water_event_id": as_json["high_water_event_id"]
    }
    assert cli("reentry", "--thread", tid, "--budget", "10").code == 2
    assert cli("reentry", "--thread", tid, "--format", "html").code == 2
    assert cli("reentry", "--thread", "00000000-0000-4000-8000-000000000000").code == 2


NODE = st.tuples(
    st.sampled_from(["open", "tentative", "killed", "consolidated"]),
    st.sampled_from(["main", "fork", "merged", "dead"]),
    st.booleans(),  # depends on the previous node
    st.booleans(),  # disputed
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(NODE, min_size=1, max_size=8), st.integers(min_value=500, max_value=3000))
def test_property_packets_never_overstate_and_never_lose_a_head(
    engine: Engine, uow: UnitOfWork, shape: list[tuple[str, str, bool, bool]], budget: int
) -> None:
    ledger = Ledger.new(engine, evidence_items=3)
    anchor = UUID(str(ledger.node("anchor of the forks")["version_id"]))
    lanes: dict[str, UUID | None] = {"main": None}
    for lane in ("fork", "merged", "dead"):
        lanes[lane] = fork_branch(
            uow,
            NewFork(
                thread=ledger.thread_id, kind="node", label=lane, divergence_type="claim", at_version=anchor
            ),
            actor=ACTOR,
        ).id
    expected_heads = {str(anchor)}
    previous: UUID | None = None
    for i, (status, lane, depends, disputed) in enumerate(shape):
        content = f"proposition {i}: the adapter {'is' if i % 2 else 'is not'} settled on lane {lane}"
        kw: dict[str, Any] = {"branch_id": lanes[lane]} if lanes[lane] else {}
        if depends and previous is not None:
            kw["depends_on"] = [previous]
        version = UUID(
            str(
                ledger.node(content, status="tentative" if status == "tentative" else "open", **kw)[
                    "version_id"
                ]
            )
        )
        if status == "killed":
            set_node_status(uow, version, status="killed", reason="no", actor=ACTOR)
        if status == "consolidated":
            for j, provider in enumerate(("anthropic", "openai")):
                ledger.claim(ledger.run(provider), version, cites=[ledger.evidence[j]])
        if disputed:
            ledger.claim(
                ledger.run("zhipu"), version, claim_type="dispute", confidence=0.3, rationale="unclear"
            )
        if status != "killed" and lane != "dead":
            expected_heads.add(str(version))
        previous = version
    merged = lanes["merged"]
    assert merged is not None
    merge_branch(uow, merged, rationale="reconciled", actor=ACTOR)
    with unit_of_work(engine) as conn:
        consolidated = [
            row[0]
            for row in conn.execute(
                text(
                    "SELECT nv.id FROM node_versions nv JOIN claims c ON c.node_version_id = nv.id "
                    "WHERE nv.thread_id = :t GROUP BY nv.id HAVING count(*) FILTER "
                    "(WHERE c.claim_type = 'endorse') >= 2"
                ),
                {"t": ledger.thread_id},
            )
        ]
    for version in consolidated:
        if consolidate(uow, version, actor=ACTOR).outcome == "committed":
            expected_heads.discard(str(version))
    dead = lanes["dead"]
    assert dead is not None
    close_branch(uow, dead, status="killed", reason="dropped", actor=ACTOR)

    packet = reentry_packet(uow, ledger.thread_id, budget=budget)
    markdown = render_markdown(packet)
    with unit_of_work(engine) as conn:
        items = ledger_items(pq(conn), ledger.thread_id)
    # No guarded word about an item that lacks the matching transition
    assert lint(markdown, items) == []
    # Every open or tentative head appears or is counted as left out
    left = sum(item.count for item in packet.left_out if item.section == "heads")
    assert packet.head_count == len(expected_heads)
    assert {h.version_id for h in packet.heads} <= expected_heads
    assert len(packet.heads) + left == len(expected_heads)
    # The budget is honoured whenever the never-cut part fits in it
    assert packet.estimated_tokens <= budget
    assert estimate_tokens(packet.model_dump(mode="json")) <= budget
