"""Markdown rendering of a thread's decision record (`council export --format markdown`):
a record to hand to a colleague, the answer first.

Agent output and every other ledger text is data, never markup, and is escaped only where
Markdown would read it as markup (:func:`md`): each text is put on one line (whitespace
collapsed, control characters removed) after this module's own words, so nothing that is
markup only at a line's start (``#``, ``>``, ``-``, ``|``, ``1.``) can start a line;
HTML's ``& < >`` become entities (no tag, no autolink, no entity of its own); and the
characters that open inline markup — backticks, ``*``, ``[ ]`` (links, images,
footnotes), ``~``, ``|`` (table cells), ``_`` where it is not between two letters or
digits, a backslash before punctuation and a trailing ``#`` — are backslash-escaped.
Hyphens, parentheses, dots and the rest stay as they are. The one place a stored text
opens a list item (each line of an answer read as words) also escapes what would start a
block there: a heading's ``#``, a list's ``-``, ``+`` or ``1.``, a setext ``=``. Only this
module's own words are markup."""

from __future__ import annotations

import re
import string
from datetime import UTC, datetime

from council.domain.results.answer import Answer, AnswerGroup
from council.domain.results.export import (
    DecisionRecord,
    RecordConsolidation,
    RecordProposition,
    RecordRound,
    RecordRun,
    round_source,
)
from council.domain.terminal import without_controls

_INLINE = frozenset("`*[]|~")
_PUNCTUATION = frozenset(string.punctuation)


def md(text: object, *, opens_block: bool = False) -> str:
    """``text`` as inert Markdown on one line, escaped only where Markdown needs it;
    ``opens_block``: the text starts a list item, so what starts a block is escaped too."""
    flat = " ".join(without_controls("" if text is None else str(text)).split())
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = []
    for i, ch in enumerate(flat):
        before = flat[i - 1] if i else ""
        after = flat[i + 1] if i + 1 < len(flat) else ""
        if (
            ch in _INLINE
            or (ch == "\\" and (after == "" or after in _PUNCTUATION))
            or (ch == "_" and not (before.isalnum() and after.isalnum()))
        ):
            out.append("\\")
        out.append(ch)
    escaped = "".join(out)
    trailing = re.search(r"(?:^| )(#+)$", escaped)  # would close an ATX heading
    if trailing:
        escaped = escaped[: trailing.start(1)] + "\\" + escaped[trailing.start(1) :]
    if opens_block:
        escaped = re.sub(r"^(\d{1,9})([.)])", r"\1\\\2", re.sub(r"^([#=+-])", r"\\\1", escaped))
    return escaped


def _q(text: object) -> str:
    return "“" + md(text) + "”"


def _id(value: object) -> str:
    """An id or hash as code (hex digits and dashes only, so nothing to escape)."""
    return "`" + re.sub(r"[^0-9a-fA-F-]", "", str(value)) + "`"


def _short(value: object) -> str:
    return _id(str(value)[:8])


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _until(start: datetime, end: datetime | None) -> str:
    """When a span that began at ``start`` ended: the time alone on the same day."""
    if end is None:
        return "unfinished"
    a, b = start.astimezone(UTC), end.astimezone(UTC)
    return "until " + (b.strftime("%H:%M:%S UTC") if a.date() == b.date() else _when(b))


def render_decision_record(record: DecisionRecord) -> str:
    """The record as Markdown: the answer first (what was established, or the live
    alternatives), then the question, the thread and its dates, each agent's summary, a
    timeline, evidence, a heading per proposition (versions, groups, consolidations with
    each rule ✓/✗, resolutions, claims), runs by round, retractions, stance changes and
    cost."""
    t = record.thread
    out = [f"# Decision record: {md(t.title)}", ""]
    out += _answer(record.answer)
    out += [
        f"**Question:** {_q(record.question)}",
        "",
        f"Thread {_id(t.id)}, created {_when(t.created_at)}; rule set {md(t.rule_set_id)}, "
        f"grouping {md(t.grouping_algorithm_id)}. Exported {_when(record.exported_at)}.",
        "",
    ]
    out += _summaries(record)
    out += _timeline(record)
    out += _evidence(record)
    for n, proposition in enumerate(record.propositions, 1):
        out += _proposition(n, proposition, record)
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
        disputed = f"; disputed by {_held(answer.dispute_groups)}" if answer.dispute_groups else ""
        out.append(
            f"**Established:** {_q(answer.content)} (version {_short(answer.version_id)}), "
            f"on {held}{disputed}."
        )
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
    """Independent groups, each once, its agents each once: ``2 independent group(s): a, b; c``."""
    if not groups:
        return "no independent group"
    return f"{len(groups)} independent group(s): " + "; ".join(md(", ".join(g.agents)) for g in groups)


def _summaries(record: DecisionRecord) -> list[str]:
    out = ["## Each agent, in its own words", ""]
    if not record.summaries:
        return [*out, "No summary.", ""]
    out += [f"- {md(s.agent)} (round {s.round}): {_q(s.summary)}" for s in record.summaries]
    return [*out, ""]


def _round_name(r: RecordRound) -> str:
    if r.source == "dispatch":
        return f"round {r.round} of dispatch {_short(r.dispatch_id)}"
    return f"round {r.round} of the import" if r.source == "import" else f"round {r.round}, recorded by hand"


def _timeline(record: DecisionRecord) -> list[str]:
    """What happened when, oldest first: the thread, each round's span, each consolidation,
    resolution and retraction proposal, and the export."""
    numbers = {p.logical_node_id: n for n, p in enumerate(record.propositions, 1)}
    events: list[tuple[datetime, str]] = [(record.thread.created_at, "thread created")]
    for r in record.rounds:
        failed = f", {r.failed} failed" if r.failed else ""
        events.append(
            (
                r.started_at,
                f"{_round_name(r)}, {_until(r.started_at, r.finished_at)}: {r.runs} run(s){failed}",
            )
        )
    for p in record.propositions:
        n = numbers[p.logical_node_id]
        for c in p.consolidations:
            events.append(
                (
                    c.created_at,
                    f"proposition {n}: consolidation {_short(c.id)}, {md(c.outcome)} (now {md(c.status)})",
                )
            )
        for s in p.resolutions:
            events.append((s.created_at, f"proposition {n}: resolved {_truth(s.outcome)} by {md(s.actor)}"))
    for x in record.retractions:
        events.append((x.created_at, f"retraction proposal {_short(x.id)} opened by {md(x.opened_by)}"))
    events.append((record.exported_at, "exported"))
    out = ["## Timeline", ""]
    out += [f"- {_when(at)}: {what}" for at, what in sorted(events, key=lambda e: e[0])]
    return [*out, ""]


def _truth(outcome: bool) -> str:
    return "true" if outcome else "false"


def _evidence(record: DecisionRecord) -> list[str]:
    out = ["## Evidence", ""]
    if not record.evidence:
        return [*out, "No evidence.", ""]
    for e in record.evidence:
        source = f", from {md(e.source_uri)}" if e.source_uri else ""
        sha = _id(e.content_sha256[:16])
        out.append(
            f"- {_short(e.id)} {_q(e.title)}: {md(e.validity)}{source} (sha256 {sha}), "
            f"added {_when(e.added_at)}"
        )
    return [*out, ""]


def _proposition(n: int, p: RecordProposition, record: DecisionRecord) -> list[str]:
    out = [f"## Proposition {n}: {_q(p.content)}", ""]
    node, head = _short(p.logical_node_id), _short(p.head_version_id)
    out.append(f"Status {md(p.status)}; node {node}, head version {head}.")
    out += ["", "### Versions", ""]
    for v in p.versions:
        out.append(
            f"- version {v.version_no} {_short(v.version_id)}, {md(v.status)}, {_when(v.created_at)}: "
            f"{_q(v.content)}"
        )
    out += ["", "### Independence groups (head version)", ""]
    if not p.independence_groups:
        out.append("No claims on the head version.")
    for g in p.independence_groups:
        who = ", ".join(md(m.agent) + (f" ({m.runs} runs)" if m.runs > 1 else "") for m in g.agents)
        out.append(f"- {md(g.kind)} group: {who} (providers {md(', '.join(g.providers))})")
    n_eff = "not computed (no correlation table)" if p.n_eff is None else f"{p.n_eff:.2f}"
    out.append("")
    out.append(f"{p.support_groups} support and {p.dispute_groups} dispute group(s); n_eff {n_eff}.")
    out += ["", "### Consolidations", ""]
    if not p.consolidations:
        out.append("None.")
    for c in p.consolidations:
        out += _consolidation(c)
    out += ["", "### Resolutions", ""]
    if not p.resolutions:
        out.append("None.")
    for s in p.resolutions:
        force = "in force" if s.in_force else "superseded"
        out.append(
            f"- {_truth(s.outcome)} ({force}), version {_short(s.node_version_id)}, {_when(s.created_at)}, "
            f"by {md(s.actor)}; source {_q(s.source)}; reason {_q(s.reason)}"
        )
    versions = {v.version_id for v in p.versions}
    claims = [(r, c) for r in record.runs for c in r.claims if c.node_version_id in versions]
    out += ["", "### Claims", ""]
    if not claims:
        out.append("None.")
    for run, claim in claims:
        rationale = f": {_q(claim.rationale)}" if claim.rationale.strip() else ""
        out.append(
            f"- {md(run.agent)} ({_round(run)}) {md(claim.claim_type)}, confidence "
            f"{claim.confidence:.2f}, on {_short(claim.node_version_id)}{rationale}"
        )
    return [*out, ""]


def _consolidation(c: RecordConsolidation) -> list[str]:
    out = [
        f"- consolidation {_short(c.id)} of version {_short(c.node_version_id)}, {_when(c.created_at)}: "
        f"{md(c.outcome)}, {md(c.status)}; rule set {md(c.rule_set_id)}, "
        f"snapshot sha256 {_id(c.snapshot_sha256)}"
    ]
    for r in c.reasons:
        out.append(f"  - {'✓' if r.ok else '✗'} {md(r.rule)}: {md(r.detail)}")
    return out


def _round(run: RecordRun) -> str:
    """A run's round as `run show` numbers it, and an imported turn's round in its record."""
    if run.debate_round is None:
        return f"round {run.round}"
    return f"round {run.round}, the imported record's round {run.debate_round}"


def _runs(record: DecisionRecord) -> list[str]:
    """The runs by round (each round's span in its heading), each with its answer in words,
    or why it failed."""
    out = ["## Runs", ""]
    if not record.runs:
        return [*out, "No runs.", ""]
    for r in record.rounds:
        out += [
            f"### {_round_name(r).capitalize()}: {_when(r.started_at)}, "
            f"{_until(r.started_at, r.finished_at)}",
            "",
        ]
        for run in record.runs:
            if (run.dispatch_id, run.round, round_source(run)) == (r.dispatch_id, r.round, r.source):
                out += _run(run)
        out.append("")
    return out


def _run(r: RecordRun) -> list[str]:
    cost = "" if r.cost_usd is None else f", ${r.cost_usd:.6f}"
    why = f": {_q(r.error or 'no reason recorded')}" if r.status == "failed" else ""
    imported = "" if r.debate_round is None else f" (the imported record's round {r.debate_round})"
    out = [
        f"- {_short(r.id)} {md(r.agent)} ({md(r.model)}, {md(r.provider)}){imported}, "
        f"{md(r.status)}{cost}{why}"
    ]
    if r.answer is not None:
        cut = " (excerpt)" if r.answer.excerpt_cut else ""
        lines = [line for line in r.answer.readable.split("\n") if line.strip()]
        if len(lines) == 1:
            out.append(f"  - answer{cut}: {md(lines[0])}")
        else:
            out.append(f"  - answer{cut}:")
            out += [f"    - {md(line, opens_block=True)}" for line in lines]
    return out


def _retractions(record: DecisionRecord) -> list[str]:
    out = ["## Retractions", ""]
    if not record.retractions:
        return [*out, "None.", ""]
    for p in record.retractions:
        out.append(
            f"- proposal {_short(p.id)} against consolidation {_short(p.consolidation_id)}, "
            f"{md(p.status)}, opened by {md(p.opened_by)} {_when(p.created_at)}: {_q(p.reason)}"
        )
        for v in p.votes:
            why = f": {_q(v.rationale)}" if v.rationale.strip() else ""
            out.append(f"  - vote {md(v.vote)} by {md(v.agent)}, confidence {v.confidence:.2f}{why}")
        for a in p.adjudications:
            out.append(
                f"  - {md(a.from_status)} → {md(a.to_status)} by {md(a.actor)}, {_when(a.created_at)}: "
                f"{_q(a.reason)}"
            )
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
