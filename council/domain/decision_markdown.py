"""Markdown rendering of a thread's decision record (`council export --format markdown`).

Agent output and every other ledger text is data, never markup: each text is put on one
line (whitespace collapsed, control characters removed), HTML's ``& < >`` become entities
and every Markdown punctuation character that can open markup is backslash-escaped, so
a title like ``<script>``, ``[x](javascript:…)`` or ``# heading`` renders as those
characters. Only this module's own words are markup."""

from __future__ import annotations

import re

from council.domain.results.answer import Answer, AnswerGroup
from council.domain.results.export import DecisionRecord, RecordConsolidation, RecordProposition
from council.domain.terminal import without_controls

# Markdown punctuation that can start markup inline or at a line's start (CommonMark's
# backslash-escapable ASCII punctuation, less what cannot open anything here).
_MARKUP = re.compile(r"([\\`*_{}\[\]()#+\-.!|~:=\"'$^])")


def md(text: object) -> str:
    """``text`` as inert Markdown on one line."""
    flat = " ".join(without_controls("" if text is None else str(text)).split())
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKUP.sub(r"\\\1", flat)


def _q(text: object) -> str:
    return "“" + md(text) + "”"


def _id(value: object) -> str:
    """An id or hash as code (hex digits and dashes only, so nothing to escape)."""
    return "`" + re.sub(r"[^0-9a-fA-F-]", "", str(value)) + "`"


def _short(value: object) -> str:
    return _id(str(value)[:8])


def render_decision_record(record: DecisionRecord) -> str:
    """The record as Markdown: the question, the answer first (what was established, or the
    live alternatives), each agent's summary, evidence, a heading per proposition (versions,
    groups, consolidations with each rule ✓/✗, claims), runs, retractions, stance changes
    and cost."""
    t = record.thread
    out = [
        f"# Decision record: {md(t.title)}",
        "",
        f"**Question:** {_q(record.question)}",
        "",
        f"Thread {_id(t.id)}; rule set {md(t.rule_set_id)}, grouping {md(t.grouping_algorithm_id)}.",
        "",
    ]
    out += _answer(record.answer)
    out += _summaries(record)
    out += _evidence(record)
    agents = {str(r.id): r.agent for r in record.runs}
    for n, proposition in enumerate(record.propositions, 1):
        out += _proposition(n, proposition, record, agents)
    out += _runs(record)
    out += _retractions(record)
    out += _stances(record)
    c = record.cost
    out += [
        "## Cost",
        "",
        f"${c.usd:.6f} over {len(record.runs)} run(s): {c.prompt_tokens} prompt and "
        f"{c.completion_tokens} completion tokens"
        + (f"; {c.unpriced} run(s) unpriced, so the dollars are a lower bound" if c.unpriced else "")
        + ".",
        "",
    ]
    return "\n".join(out)


def _answer(answer: Answer) -> list[str]:
    """The answer first: what the council established, or that it established nothing, with
    the live alternatives and their independent support and disputes."""
    out = ["## Answer", ""]
    if answer.established:
        held = _held(answer.support_groups)
        out.append(f"**Established:** {_q(answer.content)} (version {_short(answer.version_id)}), on {held}.")
    else:
        out.append("**No established answer.**" + (" The live alternatives:" if answer.alternatives else ""))
    if answer.conflict:
        out.extend(["", f"*{md(answer.conflict)}*"])
    out.append("")
    for alt in answer.alternatives:
        kind = "rival" if alt.rival else "also consolidated" if alt.consolidated else "alternative"
        disputed = f"; disputed by {_held(alt.dispute_groups)}" if alt.dispute_groups else ""
        out.append(
            f"- {kind} {_q(alt.content)} (version {_short(alt.version_id)}): support "
            f"{_held(alt.support_groups)}{disputed}"
        )
    return [*out, ""] if answer.alternatives else out


def _held(groups: list[AnswerGroup]) -> str:
    if not groups:
        return "no independent group"
    return f"{len(groups)} independent group(s) (" + "; ".join(md(", ".join(g.agents)) for g in groups) + ")"


def _summaries(record: DecisionRecord) -> list[str]:
    out = ["## Each agent, in its own words", ""]
    if not record.summaries:
        return [*out, "No summary.", ""]
    out += [f"- {md(s.agent)} (round {s.round}): {_q(s.summary)}" for s in record.summaries]
    return [*out, ""]


def _evidence(record: DecisionRecord) -> list[str]:
    out = ["## Evidence", ""]
    if not record.evidence:
        return [*out, "No evidence.", ""]
    for e in record.evidence:
        source = f", from {md(e.source_uri)}" if e.source_uri else ""
        sha = _id(e.content_sha256[:16])
        out.append(f"- {_short(e.id)} {_q(e.title)}: {md(e.validity)}{source} (sha256 {sha})")
    return [*out, ""]


def _proposition(n: int, p: RecordProposition, record: DecisionRecord, agents: dict[str, str]) -> list[str]:
    out = [f"## Proposition {n}: {_q(p.content)}", ""]
    node, head = _short(p.logical_node_id), _short(p.head_version_id)
    out.append(f"Status {md(p.status)}; node {node}, head version {head}.")
    out += ["", "### Versions", ""]
    for v in p.versions:
        out.append(f"- version {v.version_no} {_short(v.version_id)}, {md(v.status)}: {_q(v.content)}")
    out += ["", "### Independence groups (head version)", ""]
    if not p.independence_groups:
        out.append("No claims on the head version.")
    for g in p.independence_groups:
        who = ", ".join(f"{md(agents.get(r, r))}" for r in g.runs)
        out.append(f"- {md(g.kind)} group: {who} (providers {md(', '.join(g.providers))})")
    n_eff = "not computed (no correlation table)" if p.n_eff is None else f"{p.n_eff:.2f}"
    out.append("")
    out.append(f"{p.support_groups} support and {p.dispute_groups} dispute group(s); n_eff {n_eff}.")
    out += ["", "### Consolidations", ""]
    if not p.consolidations:
        out.append("None.")
    for c in p.consolidations:
        out += _consolidation(c)
    versions = {v.version_id for v in p.versions}
    claims = [(r, c) for r in record.runs for c in r.claims if c.node_version_id in versions]
    out += ["", "### Claims", ""]
    if not claims:
        out.append("None.")
    for run, claim in claims:
        rationale = f": {_q(claim.rationale)}" if claim.rationale.strip() else ""
        out.append(
            f"- {md(run.agent)} (round {run.round}) {md(claim.claim_type)}, confidence "
            f"{claim.confidence:.2f}, on {_short(claim.node_version_id)}{rationale}"
        )
    return [*out, ""]


def _consolidation(c: RecordConsolidation) -> list[str]:
    out = [
        f"- consolidation {_short(c.id)} of version {_short(c.node_version_id)}: {md(c.outcome)}, "
        f"{md(c.status)}; rule set {md(c.rule_set_id)}, snapshot sha256 {_id(c.snapshot_sha256)}"
    ]
    for r in c.reasons:
        out.append(f"  - {'✓' if r.ok else '✗'} {md(r.rule)}: {md(r.detail)}")
    return out


def _runs(record: DecisionRecord) -> list[str]:
    out = ["## Runs", ""]
    if not record.runs:
        return [*out, "No runs.", ""]
    for r in record.runs:
        cost = "" if r.cost_usd is None else f", ${r.cost_usd:.6f}"
        out.append(
            f"- {_short(r.id)} {md(r.agent)} ({md(r.model)}, {md(r.provider)}), round {r.round}, "
            f"{md(r.status)}{cost}"
        )
        if r.answer is not None:
            cut = " (excerpt)" if r.answer.excerpt_cut else ""
            out.append(f"  - answer{cut}: {_q(r.answer.excerpt)}")
    return [*out, ""]


def _retractions(record: DecisionRecord) -> list[str]:
    out = ["## Retractions", ""]
    if not record.retractions:
        return [*out, "None.", ""]
    for p in record.retractions:
        out.append(
            f"- proposal {_short(p.id)} against consolidation {_short(p.consolidation_id)}, "
            f"{md(p.status)}, opened by {md(p.opened_by)}: {_q(p.reason)}"
        )
        for v in p.votes:
            why = f": {_q(v.rationale)}" if v.rationale.strip() else ""
            out.append(f"  - vote {md(v.vote)} by {md(v.agent)}, confidence {v.confidence:.2f}{why}")
        for a in p.adjudications:
            out.append(f"  - {md(a.from_status)} → {md(a.to_status)} by {md(a.actor)}: {_q(a.reason)}")
    return [*out, ""]


def _stances(record: DecisionRecord) -> list[str]:
    out = ["## Stance changes", ""]
    if not record.stance_changes:
        return [*out, "None.", ""]
    for s in record.stance_changes:
        before = md(s.prior_claim_type) if s.prior_claim_type else "no earlier stance"
        out.append(
            f"- {md(s.agent)}, round {s.round}, on {_short(s.node_version_id)}: {before} → "
            f"{md(s.claim_type)} ({md(s.change_class)})"
        )
    return [*out, ""]
