"""The main job end to end, at the stage the product has reached.

Today: the ledger and governed consolidation. A thread with three evidence
items; Claude, Codex and GLM runs recorded with their lineage (agent workers
that call the models arrive with the runs capability); claims that form
independent groups, a deliberative follow-up whose exposure merges groups;
one consolidation committed exactly once and replayed from stored records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from sqlalchemy import Engine

from council import sources
from council.ledger import claims, committer, consolidation_reads, evidence, nodes, replay, runs, threads

Say = Callable[[str], None]
ACTOR = "demo"

QUESTION = "Is SQLite parity sufficient for the production adapter?"
OBJECTIVE = (
    "Decide whether the adapter's SQLite test parity is enough to ship the Postgres production "
    "adapter without a dedicated Postgres test tier."
)
EVIDENCE = (
    (
        "Parity suite report",
        "The adapter parity suite passes 412/412 query-semantics cases on SQLite and PG 16.",
    ),
    (
        "Concurrency load test",
        "Under 8 concurrent writers SQLite serialises on the WAL lock; PG 16 does not.",
    ),
    ("Incident 2291", "A production deadlock in March involved advisory locks, which SQLite does not model."),
)
AGENTS = (("claude", "anthropic/claude-sonnet-4-5"), ("codex", "openai/gpt-5-codex"), ("glm", "zai/glm-4.6"))


def run_demo(engine: Engine, say: Say) -> dict[str, Any]:
    """Build the scripted thread and drive it to a consolidation; returns a summary."""
    thread = threads.create_thread(engine, title="SQLite parity", objective=OBJECTIVE, actor=ACTOR)
    tid = thread["id"]
    say(f"thread {tid}: {QUESTION}")
    ev = [
        evidence.add_evidence(
            engine, thread_id=tid, source=sources.from_text(body), title=title, actor=ACTOR
        )["id"]
        for title, body in EVIDENCE
    ]
    say(f"evidence: {len(ev)} items attached")
    semantics = nodes.add_node(
        engine,
        thread_id=tid,
        content="SQLite parity establishes query-semantics equivalence with Postgres.",
        status="tentative",
        cites=[ev[0]],
        interpretation="412/412 cases agree",
        actor=ACTOR,
    )
    sufficient = nodes.add_node(
        engine,
        thread_id=tid,
        content="SQLite parity is sufficient to ship the production adapter.",
        depends_on=[semantics["version_id"]],
        actor=ACTOR,
    )
    say("nodes: 2 (one depends on the other)")

    round1 = {name: _run(engine, tid, name, model, 1) for name, model in AGENTS}
    claims.add_claim(
        engine,
        run_id=round1["claude"],
        version_id=semantics["version_id"],
        claim_type="endorse",
        confidence=0.85,
        rationale="every semantics case agrees",
        cites=[ev[0]],
        actor=ACTOR,
    )
    claims.add_claim(
        engine,
        run_id=round1["codex"],
        version_id=semantics["version_id"],
        claim_type="endorse",
        confidence=0.8,
        rationale="the incident involved locking, not query semantics",
        cites=[ev[2]],
        interpretation="out of scope for semantics",
        actor=ACTOR,
    )
    claims.add_claim(
        engine,
        run_id=round1["glm"],
        version_id=semantics["version_id"],
        claim_type="dispute",
        confidence=0.4,
        rationale="parity says nothing about concurrency",
        cites=[ev[1]],
        actor=ACTOR,
    )
    claims.add_claim(
        engine,
        run_id=round1["glm"],
        version_id=sufficient["version_id"],
        claim_type="dispute",
        confidence=0.9,
        rationale="concurrent writes diverge",
        cites=[ev[1]],
        actor=ACTOR,
    )
    say("round 1 (independent): claude and codex endorse, glm disputes")
    _show_groups(engine, semantics["version_id"], say)

    # Round 2 is deliberative: the new run was shown claude's stance, so it is not independent of it.
    follower = _run(engine, tid, "codex", AGENTS[1][1], 2, exposed_to=[round1["claude"]])
    claims.add_claim(
        engine,
        run_id=follower,
        version_id=sufficient["version_id"],
        claim_type="endorse",
        confidence=0.7,
        cites=[ev[0]],
        actor=ACTOR,
    )
    claims.add_claim(
        engine,
        run_id=round1["claude"],
        version_id=sufficient["version_id"],
        claim_type="endorse",
        confidence=0.6,
        cites=[ev[0]],
        actor=ACTOR,
    )
    say("round 2 (deliberative): codex, shown claude's stance, endorses the second node")
    _show_groups(engine, sufficient["version_id"], say)

    first = committer.consolidate(engine, semantics["version_id"], actor=ACTOR)
    again = committer.consolidate(engine, semantics["version_id"], actor=ACTOR)
    second = committer.consolidate(engine, sufficient["version_id"], actor=ACTOR)
    say(f"consolidate node 1: {first['outcome']} ({first['consolidation_id']}); again: {again['outcome']}")
    blocked = ", ".join(r["rule"] for r in second["reasons"] if not r["ok"])
    say(f"consolidate node 2: {second['outcome']} (blocked by: {blocked})")
    replayed = replay.replay(engine, first["consolidation_id"])
    say(f"replay {first['consolidation_id']}: {'match' if replayed['match'] else 'MISMATCH'}")
    ok = (
        first["outcome"] == "committed"
        and again["outcome"] == "already_consolidated"
        and again["consolidation_id"] == first["consolidation_id"]
        and second["outcome"] == "not_ready"
        and replayed["match"]
    )
    return {
        "ok": ok,
        "thread_id": tid,
        "evidence_ids": ev,
        "node_version_ids": [semantics["version_id"], sufficient["version_id"]],
        "consolidation_id": first["consolidation_id"],
        "outcomes": [first["outcome"], again["outcome"], second["outcome"]],
        "replay_match": replayed["match"],
        "look_closer": [
            f"council groups --node {semantics['version_id']}",
            f"council replay {first['consolidation_id']}",
            f"council history --node {sufficient['version_id']}",
            "council memory list --status stable",
            f"council events --thread {tid}",
        ],
    }


def _run(
    engine: Engine,
    thread_id: UUID,
    agent: str,
    model: str,
    round_no: int,
    exposed_to: list[UUID] | None = None,
) -> UUID:
    row = runs.record_run(
        engine,
        thread_id=thread_id,
        agent=agent,
        model=model,
        round_no=round_no,
        exposed_to=exposed_to or [],
        actor=ACTOR,
    )
    return UUID(str(row["id"]))


def _show_groups(engine: Engine, version_id: UUID, say: Say) -> None:
    found = consolidation_reads.groups(engine, version_id)
    for group in found["groups"]:
        agents = ", ".join(f"{r[:8]}({p})" for r, p in group["run_providers"].items())
        say(f"  {group['kind']} group {group['id']}: {agents}")
