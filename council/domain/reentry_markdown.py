"""Markdown rendering of a reentry packet.

The formatter describes topology and state in neutral words; propositions
are quoted, never restated. It does not itself use the guarded words
(concluded, rejected, settled, preferred, set aside): items whose state the
ledger records durably are named by that state ("consolidated", "killed",
"merged") — the epistemic linter checks the output in the tests.
"""

from __future__ import annotations

from collections.abc import Callable

from council.domain.reentry import BranchState, Fetch, ReentryPacket, RivalRef


def _q(text: str) -> str:
    return "“" + " ".join(text.split()) + "”"


def _short(value: str | None) -> str:
    return (value or "")[:8]


def _open_rivals(rivals: list[str]) -> str:
    if not rivals:
        return ""
    return (
        f"; live counterargument: rival alternative {', '.join(f'`{_short(r)}`' for r in rivals)} still open"
    )


def _rival_line(rival: RivalRef) -> str:
    """A head's rival alternative: both cannot hold (at most one consolidates)."""
    if rival.consolidated:
        return (
            f"  - rival alternative of `{_short(rival.version_id)}`, which is consolidated: "
            "this head is the live counterargument to it"
        )
    return f"  - rival alternative of `{_short(rival.version_id)}` ({rival.status}): both cannot hold"


def _branch_line(branch: BranchState) -> str:
    if branch.kind == "main":
        return f"- main line ({branch.status})"
    point = f" at version {_short(branch.divergence_point)}" if branch.divergence_point else ""
    what = f"{branch.kind}-level fork {branch.label!r}{point}, diverging over {branch.divergence_type}"
    if branch.status == "killed":
        return f"- {what}: killed ({branch.killed_reason or 'no reason recorded'})"
    if branch.status == "merged":
        return f"- {what}: merged"
    return f"- {what}: {branch.status}, not merged"


# How a face says where a left-out section can be read: (thread id, what to read) -> text.
FetchHint = Callable[[str, Fetch], str]


def plain_hint(_thread_id: str, fetch: Fetch) -> str:
    """The hint of no face in particular."""
    if fetch.read == "reentry":
        return f"the reentry packet with a budget of {fetch.budget} tokens"
    return {"evidence": "an evidence item by its id", "branches": "the thread's branches"}.get(
        fetch.read, "the thread's memory"
    )


def render_markdown(packet: ReentryPacket, hint: FetchHint = plain_hint) -> str:
    """The packet as Markdown; ``hint`` words where each left-out section can be read."""
    out: list[str] = [f"# Reentry packet: {packet.title}", "", f"**Objective:** {_q(packet.objective)}", ""]
    if packet.questions:
        out += ["**Asked since:**", "", *(f"- {_q(q)}" for q in packet.questions), ""]
    note = f"Thread `{packet.thread_id}`, ledger up to event #{packet.high_water_event_id or 0}; "
    note += f"about {packet.estimated_tokens} of {packet.budget_tokens} tokens."
    if packet.blind:
        note += " Blind briefing: other runs' stances are redacted."
    out += [note, ""]

    if packet.objective_forks:
        out += ["## Unresolved objective forks", ""]
        out += [
            f"- {b.label!r}: alternative objective {_q(b.objective or '')} (active, not merged); "
            "nothing under a disputed objective consolidates"
            for b in packet.objective_forks
        ]
        out.append("")

    out += [f"## Open frontier ({len(packet.heads)} of {packet.head_count} open or tentative heads)", ""]
    deps: dict[str, list[str]] = {}
    for d in packet.dependencies:
        deps.setdefault(d.root, []).append(
            f"{'  ' * d.depth}- depends on {_q(d.content)} ({d.status}, `{_short(d.version_id)}`)"
        )
    counters: dict[str, list[str]] = {}
    for c in packet.counterarguments:
        if c.kind == "contradicting_node":
            line = f"  - contradicted by {_q(c.content or '')} (`{_short(c.version_id)}`)"
        else:
            who = f"{c.agent} ({c.provider}, confidence {c.confidence})"
            line = f"  - disputed by {who}: {_q(c.rationale or '')}"
        counters.setdefault(c.target, []).append(line)
    cited: dict[str, list[str]] = {}
    for e in packet.evidence:
        for version in e.cited_by:
            cited.setdefault(version, []).append(f"`{_short(e.id)}` {e.title} ({e.validity})")
    for head in packet.heads:
        claims = ""
        if head.support_claims is not None:
            claims = f"; {head.support_claims} support and {head.dispute_claims} dispute claims"
        out.append(
            f"- [{head.status}] {_q(head.content)} (node `{_short(head.logical_node_id)}`, version "
            f"{head.version_no} `{_short(head.version_id)}`, branch {head.branch_label}{claims})"
        )
        out += deps.get(head.version_id, [])
        out += counters.get(head.version_id, [])
        out += [_rival_line(r) for r in head.rivals]
        if cited.get(head.version_id):
            out.append("  - cites " + "; ".join(cited[head.version_id]))
    out.append("")

    if packet.actions:
        out += ["## Pending actions", ""]
        out += [
            f"- {_q(a.description)}; acceptance condition: {_q(a.acceptance_condition)}"
            + (f" (gates `{_short(a.node_version_id)}`)" if a.node_version_id else "")
            for a in packet.actions
        ]
        out.append("")
    if packet.evidence:
        expand = hint(packet.thread_id, Fetch(read="evidence"))
        out += [f"## Evidence references (expand: {expand})", ""]
        out += [f"- `{e.id}` {e.title}, sha256 `{e.sha256[:16]}…`, {e.validity}" for e in packet.evidence]
        out.append("")
    if packet.branches:
        active = sum(1 for b in packet.branches if b.status == "active")
        out += [f"## Branch topology ({len(packet.branches)} branches, {active} active)", ""]
        out += [_branch_line(b) for b in packet.branches]
        out.append("")
    if packet.memory:
        out += ["## Memory (from consolidations)", ""]
        out += [
            f"- {_q(m.content)}: {m.status} (consolidation `{_short(m.consolidation_id)}`)"
            + _open_rivals(m.rivals)
            for m in packet.memory
        ]
        out.append("")
    if packet.left_out:
        out += ["## Left out (over budget)", ""]
        out += [
            f"- {item.count} {item.section}: {hint(packet.thread_id, item.fetch)}" for item in packet.left_out
        ]
        out.append("")
    return "\n".join(out)
