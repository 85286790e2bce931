"""An honest quorum: a council that lost members does not settle as if whole. Pure.

A node version's *council* is the agents the dispatches that judged it sent: every
dispatch (not a review, not a control run) with a run that claimed on the version, and
every later dispatch on the thread that sent one of those agents again (a re-run of the
missing agents). The ledger gathers one ``Seat`` per run of those dispatches; the
decision's snapshot carries them, so replay is exact.

An agent *answered* when at least one of its runs in the council succeeded. Failed,
timed-out, queued and running runs do not answer. ``min_council_answered`` is the share
of the council's distinct agents that must have answered (docs/architecture.md §4); a
version no dispatch judged (claims recorded by hand or over MCP) lost no member and passes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypedDict


class Seat(TypedDict):
    dispatch_id: str
    run_id: str
    agent: str
    status: str  # the run's status when the decision was made


class Quorum(TypedDict):
    agents: int
    answered: int
    share: float | None
    missing: list[dict[str, str]]  # each agent that did not answer, with its last run's status


def quorum(seats: Iterable[Seat]) -> Quorum:
    by_agent: dict[str, list[Seat]] = {}
    for seat in sorted(seats, key=lambda s: (s["agent"], s["dispatch_id"], s["run_id"])):
        by_agent.setdefault(seat["agent"], []).append(seat)
    answered = {a for a, ss in by_agent.items() if any(s["status"] == "succeeded" for s in ss)}
    missing = [
        {"agent": a, "status": ss[-1]["status"], "run_id": ss[-1]["run_id"]}
        for a, ss in sorted(by_agent.items())
        if a not in answered
    ]
    n = len(by_agent)
    return {
        "agents": n,
        "answered": len(answered),
        "share": None if n == 0 else round(len(answered) / n, 6),
        "missing": missing,
    }


def describe(q: Quorum, need: float) -> str:
    if q["agents"] == 0:
        return f"no dispatch sent a council for this version (a {need:g} share is required of one)"
    text = f"{q['answered']} of {q['agents']} council agent(s) answered, a {need:g} share required"
    if q["missing"]:
        text += "; not answered: " + ", ".join(f"{m['agent']} ({m['status']})" for m in q["missing"])
    return text


def met(q: Quorum, need: float) -> bool:
    return q["share"] is None or q["share"] >= need
