"""The reentry packet (docs/architecture.md §6): the active frontier within a token budget.

Built from the frontier query's rows by a pure function. What does not fit
the budget is cut by a fixed priority and listed under ``left_out`` with how
to fetch it — never silently dropped. Only killed (resolved-negative)
branches are compressed, to one line each (invariant 7).

Priority, highest first (never cut: the objective, the questions asked on the thread and
unresolved objective forks, because objective disagreement outranks everything under it):
  1. open and tentative heads (tentative first, then most recently changed)
  2. live counterarguments of the heads shown
  3. open pending actions and their acceptance conditions
  4. the heads' depends_on chains
  5. evidence references: every item attached to the thread (challenged or invalidated
     first, then those the frontier cites)
  6. branch topology
  7. memory (stable, provisional, contested, and retracted: a next session is told
     what was consolidated and then retracted)
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

FORMAT = "council-reentry-v1"
CHARS_PER_TOKEN = 4  # estimate; documented in docs/guide/reentry.md
M = TypeVar("M", bound=BaseModel)


def estimate_tokens(value: object) -> int:
    """Tokens of a value's compact JSON (ceil of characters / 4, plus one for the
    separator), so the costs of parts add up to at least the cost of the whole."""
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return -(-len(text) // CHARS_PER_TOKEN) + 1


class EvidenceRef(BaseModel):
    id: str
    title: str
    sha256: str
    validity: str
    cited_by: list[str] = Field(default_factory=list)


class Counterargument(BaseModel):
    target: str
    kind: Literal["contradicting_node", "dispute"]
    version_id: str | None = None
    content: str | None = None
    run_id: str | None = None
    agent: str | None = None
    provider: str | None = None
    confidence: str | None = None
    rationale: str | None = None


class Dependency(BaseModel):
    root: str
    version_id: str
    depth: int
    status: str
    content: str


class RivalRef(BaseModel):
    """Another alternative of a head's set (docs/architecture.md §4): both cannot hold."""

    version_id: str  # its head version
    status: str
    consolidated: bool  # its node holds a live consolidation: this head is the live counterargument to it


class Head(BaseModel):
    version_id: str
    logical_node_id: str
    branch_id: str
    branch_label: str
    status: str
    version_no: int
    content: str
    support_claims: int | None = None
    dispute_claims: int | None = None
    rivals: list[RivalRef] = Field(default_factory=list)


class PendingAction(BaseModel):
    id: str
    node_version_id: str | None
    branch_id: str
    description: str
    acceptance_condition: str


class BranchState(BaseModel):
    id: str
    kind: str
    label: str
    status: str
    divergence_type: str | None
    divergence_point: str | None
    parent_branch_id: str | None
    objective: str | None
    killed_reason: str | None = None


class MemoryNote(BaseModel):
    id: str
    node_version_id: str
    consolidation_id: str
    status: str
    content: str
    rivals: list[str] = Field(default_factory=list)  # its rivals still open: live counterarguments


class Fetch(BaseModel):
    """How to read what a section left out: the reentry packet again with a larger
    budget, an evidence item by its id, the thread's branches or its memory. Each
    face says it its own way (a command, a URL, a tool call)."""

    read: Literal["reentry", "evidence", "branches", "memory"]
    budget: int | None = None


class LeftOut(BaseModel):
    section: str
    count: int
    fetch: Fetch


class ReentryPacket(BaseModel):
    format: str = FORMAT
    thread_id: str
    title: str
    objective: str
    # Questions asked on the thread after its objective (`council ask --thread`), in order.
    questions: list[str] = []
    blind: bool
    budget_tokens: int
    estimated_tokens: int
    high_water_event_id: int | None
    objective_forks: list[BranchState]
    heads: list[Head]
    head_count: int
    counterarguments: list[Counterargument]
    actions: list[PendingAction]
    dependencies: list[Dependency]
    evidence: list[EvidenceRef]
    branches: list[BranchState]
    memory: list[MemoryNote]
    left_out: list[LeftOut]


def _branches(rows: dict[str, Any]) -> dict[str, BranchState]:
    killed = rows.get("killed_reasons") or {}
    return {
        str(b["id"]): BranchState(
            id=str(b["id"]),
            kind=b["kind"],
            label=b["label"],
            status=b["status"],
            divergence_type=b["divergence_type"],
            divergence_point=_s(b["fork_version_id"]),
            parent_branch_id=_s(b["parent_branch_id"]),
            objective=b["objective"],
            killed_reason=killed.get(str(b["id"])),
        )
        for b in rows["branches"]
    }


def _s(value: object) -> str | None:
    return None if value is None else str(value)


def build_packet(rows: dict[str, Any], *, budget: int, blind: bool) -> ReentryPacket:
    """Fill the packet by priority until the budget is spent (pure)."""
    thread = rows["thread"]
    tid = str(thread["id"])
    branches = _branches(rows)
    forks = [b for b in branches.values() if b.kind == "objective" and b.status == "active"]
    packet = ReentryPacket(
        thread_id=tid,
        title=thread["title"],
        objective=thread["objective"],
        questions=[str(q) for q in rows.get("questions") or []],
        blind=blind,
        budget_tokens=budget,
        estimated_tokens=0,
        high_water_event_id=rows["high_water_event_id"],
        objective_forks=forks,
        heads=[],
        head_count=int(rows["head_count"]),
        counterarguments=[],
        actions=[],
        dependencies=[],
        evidence=[],
        branches=[],
        memory=[],
        left_out=[],
    )
    spent = estimate_tokens(packet.model_dump(mode="json"))
    more = Fetch(read="reentry", budget=max(budget * 4, 1000))
    # Room is kept for a left-out note for every section still to come, so what
    # is cut is always listed within the budget.
    fetches = {
        "evidence": Fetch(read="evidence"),
        "branches": Fetch(read="branches"),
        "memory": Fetch(read="memory"),
    }
    totals = {
        "heads": int(rows["head_count"]),
        "counterarguments": int(rows["counter_node_count"]) + (0 if blind else int(rows["dispute_count"])),
        "pending actions": int(rows["action_count"]),
        "dependencies": int(rows["dependency_count"]),
        "evidence": int(rows.get("evidence_count", len(rows["evidence"]))),
        "branches": len(rows["branches"]),
        "memory": int(rows["memory_count"]),
    }
    notes = {
        name: LeftOut(section=name, count=total, fetch=fetches.get(name, more))
        for name, total in totals.items()
    }
    reserved = {name: estimate_tokens(note.model_dump(mode="json")) for name, note in notes.items()}

    def fill(section: str, items: list[M], target: list[M]) -> None:
        nonlocal spent
        reserved.pop(section)
        room = budget - spent - sum(reserved.values())
        costs = [estimate_tokens(item.model_dump(mode="json")) for item in items]
        note = notes[section]
        complete = len(items) == totals[section] and sum(costs) <= room
        if not complete:
            room -= estimate_tokens(note.model_dump(mode="json"))  # the count only shrinks
        for item, cost in zip(items, costs, strict=True):
            if cost > room:
                break
            target.append(item)
            spent += cost
            room -= cost
        if len(target) < totals[section]:
            note.count = totals[section] - len(target)
            packet.left_out.append(note)
            spent += estimate_tokens(note.model_dump(mode="json"))

    heads = [
        Head(
            version_id=str(h["version_id"]),
            logical_node_id=str(h["logical_node_id"]),
            branch_id=str(h["branch_id"]),
            branch_label=branches[str(h["branch_id"])].label,
            status=h["status"],
            version_no=int(h["version_no"]),
            content=h["content"],
            # Claim counts are stances in aggregate: a blind briefing carries none.
            support_claims=None if blind else int(h["support_claims"]),
            dispute_claims=None if blind else int(h["dispute_claims"]),
            rivals=[RivalRef.model_validate(r) for r in h.get("rivals") or []],
        )
        for h in rows["heads"]
    ]
    fill("heads", heads, packet.heads)
    shown = {h.version_id for h in packet.heads}

    counters = [
        Counterargument(
            target=str(c["target"]),
            kind="contradicting_node",
            version_id=str(c["version_id"]),
            content=c["content"],
        )
        for c in rows["counter_nodes"]
        if str(c["target"]) in shown
    ]
    if not blind:
        counters += [
            Counterargument(
                target=str(d["target"]),
                kind="dispute",
                run_id=str(d["run_id"]),
                agent=d["agent"],
                provider=d["provider"],
                confidence=d["confidence"],
                rationale=d["rationale"],
            )
            for d in rows["disputes"]
            if str(d["target"]) in shown
        ]
    fill("counterarguments", counters, packet.counterarguments)

    actions = [
        PendingAction(
            id=str(a["id"]),
            node_version_id=_s(a["node_version_id"]),
            branch_id=str(a["branch_id"]),
            description=a["description"],
            acceptance_condition=a["acceptance_condition"],
        )
        for a in rows["actions"]
    ]
    fill("pending actions", actions, packet.actions)

    deps = [
        Dependency(
            root=str(d["root"]),
            version_id=str(d["version_id"]),
            depth=int(d["depth"]),
            status=d["status"],
            content=d["content"],
        )
        for d in rows["dependencies"]
        if str(d["root"]) in shown
    ]
    fill("dependencies", deps, packet.dependencies)

    evidence = [
        EvidenceRef(
            id=str(e["id"]),
            title=e["title"],
            sha256=e["sha256"],
            validity=e["validity"],
            cited_by=[str(v) for v in e["cited_by"]],
        )
        for e in rows["evidence"]
    ]
    fill("evidence", evidence, packet.evidence)

    ordered = sorted(branches.values(), key=lambda b: (b.kind != "main", b.status == "killed", b.label, b.id))
    fill("branches", ordered, packet.branches)

    memory = [
        MemoryNote(
            id=str(m["id"]),
            node_version_id=str(m["node_version_id"]),
            consolidation_id=str(m["consolidation_id"]),
            status=m["status"],
            content=m["content"],
            rivals=[str(r) for r in m.get("rivals") or []],
        )
        for m in rows["memory"]
    ]
    fill("memory", memory, packet.memory)
    packet.estimated_tokens = spent
    return packet
