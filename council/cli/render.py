"""Human renderings of the detailed results: what `--json` says, said for a person
(`run show`, `history --node`, `memory list`, `evidence show`). Each takes the
result's JSON document, so the two outputs cannot drift apart in content."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from council.cli.output import console, inert

OK, NOT_OK = "[green]✓[/]", "[red]✗[/]"


def short(value: object, size: int = 8) -> str:
    """An id as the tables print it (accepted back wherever an id is taken)."""
    return "" if value is None else str(value)[:size]


def when(value: object) -> str:
    return "" if value is None else str(value).replace("T", " ")[:19]


def transitions(items: list[dict[str, Any]], indent: str = "    ") -> None:
    """from → to, actor, reason, time: one line each, oldest first."""
    for item in items:
        console.print(
            f"{indent}{when(item['created_at'])}  {inert(item['from_status'])} → "
            f"[bold]{inert(item['to_status'])}[/]"
            f"  by {inert(item['actor'])}: {inert(item['reason'])}",
            highlight=False,
        )


def reasons(items: list[dict[str, Any]], indent: str = "    ") -> None:
    """Each rule's ✓ / ✗ and its detail."""
    for reason in items:
        mark = OK if reason["ok"] else NOT_OK
        console.print(f"{indent}{mark} {inert(reason['rule'])}: {inert(reason['detail'])}", highlight=False)


def run_shown(data: dict[str, Any]) -> None:
    ran = "simulated" if data["simulated"] else ("real" if data["runtime"] else "recorded")
    why = (data.get("executor") or {}).get("why")
    if why and data["runtime"]:
        ran = f"{ran}: {inert(why)}"
    console.print(
        f"[bold]run {data['id']}[/]  {inert(data['agent'])} · {inert(data['model'])} "
        f"(provider {inert(data['provider'])}, {ran}) — [bold]{inert(data['status'])}[/]",
        highlight=False,
    )
    console.print(
        f"  runtime {inert(data['runtime'] or 'recorded outside the workers')} · "
        f"mode {inert(data['mode'])} · "
        f"round {data['round']} · attempt {data['attempt']}",
        highlight=False,
    )
    children = ", ".join(short(c) for c in data["children"]) or "none"
    console.print(
        f"  lineage: parent {short(data['parent_run_id']) or 'none'} · dispatch "
        f"{short(data['dispatch_id']) or 'none'} · proposal {short(data['proposal_id']) or 'none'} · "
        f"children {children}",
        highlight=False,
    )
    if data.get("control_of"):
        console.print(
            f"  control run of {short(data['control_of'])}: the same profile on the blind briefing, "
            "never counted as support",
            highlight=False,
        )
    console.print(f"  request sha256: {data['request_sha256'] or '(none stored)'}", highlight=False)
    if data.get("error"):
        console.print(f"  error: {inert(data['error'])}", highlight=False)
    console.print(f"  exposures ({len(data['exposures'])}):")
    for exposure in data["exposures"]:
        if exposure["kind"] == "stance":
            whose = short(exposure["exposed_to_run_id"])
            agent = exposure.get("exposed_to_agent")
            what = f"stance of run {whose}" + (f" ({inert(agent)})" if agent else "")
        else:
            what = f"proposition of node {short(exposure['node_version_id'])}"
        extra = f", claim {short(exposure['claim_id'])}" if exposure["claim_id"] else ""
        console.print(f"    {what} — arrived via {inert(exposure['channel'])}{extra}", highlight=False)
    console.print(f"  claims ({len(data['claims'])}):")
    for claim in data["claims"]:
        why = f" — {inert(claim['rationale'])}" if claim["rationale"] else ""
        console.print(
            f"    {inert(claim['claim_type'])} node {short(claim['node_version_id'])} "
            f"confidence {claim['confidence']:.2f}{why}",
            highlight=False,
        )
    if data["attempts"]:
        console.print("  attempts:")
        for attempt in data["attempts"]:
            reason = f": {inert(attempt['reason'])}" if attempt["reason"] else ""
            console.print(
                f"    {attempt['attempt']} on {inert(attempt['worker'])} {when(attempt['claimed_at'])} → "
                f"{inert(attempt['status'] or 'running')} {when(attempt['ended_at'])}{reason}",
                highlight=False,
            )
    answer(data.get("answer"))
    if data.get("trace") is not None:  # agent-CLI runtimes only
        console.print("  trace:")
        for call in data["trace"]:
            doc = call["trace"]
            usage = ", ".join(f"{k} {v}" for k, v in sorted(doc.get("usage", {}).items())) or "no usage"
            stopped = f", stopped: {inert(call['stopped'])}" if call["stopped"] else ""
            tools, files = len(doc.get("tool_calls", [])), len(doc.get("files_read", []))
            console.print(
                f"    attempt {call['attempt']} call {call['call']}: {inert(call['runtime'])} "
                f"{inert(call['cli_version'])}, exit {call['exit_status']}{stopped}, "
                f"{doc.get('turns', 0)} turn(s), {tools} tool call(s), {files} file(s) read, "
                f"{doc.get('event_count', 0)} event(s); {inert(usage)}",
                highlight=False,
            )
        opened = data.get("opened_evidence") or []
        console.print("  evidence opened / cited:" if opened else "  evidence opened / cited: none")
        for item in opened:
            flags = " and ".join(w for w, on in (("opened", item["opened"]), ("cited", item["cited"])) if on)
            console.print(f"    {short(item['evidence_id'])} {flags}", highlight=False)


def answer(kept: dict[str, Any] | None) -> None:
    """The run's kept answer, as text: never markup (escaped for Rich)."""
    if not kept:
        console.print("  answer: none kept")
        return
    cut = f", truncated from {kept['byte_length']} bytes" if kept["truncated"] else ""
    console.print(
        f"  answer (attempt {kept['attempt']} round {kept['round']}, "
        f"sha256 {short(kept['sha256'], 12)}{cut}):",
        highlight=False,
    )
    for line in kept["text"].splitlines() or [""]:
        console.print(f"    {inert(line)}", highlight=False, markup=True)


def history(data: dict[str, Any]) -> None:
    console.print(f"[bold]logical node {data['logical_node_id']}[/]")
    for kind, key, state in (
        ("consolidation", "consolidations", "status"),
        ("evaluation", "evaluations", "outcome"),
    ):
        console.print(f"{key} ({len(data[key])}):")
        for item in data[key]:
            console.print(
                f"  {kind} {short(item['id'])} of version {short(item['node_version_id'])} — "
                f"[bold]{inert(item[state])}[/] ({when(item['created_at'])}, "
                f"snapshot {short(item['snapshot_sha256'], 12)})"
                + ("" if item.get("n_eff") is None else f", n_eff {item['n_eff']:.2f}"),
                highlight=False,
            )
            reasons(item["reasons"])


def memory(data: dict[str, Any]) -> None:
    items = data["items"]
    title = f"memory ({inert(data['status'])})" if data.get("status") else "memory"
    console.print(f"[bold]{title}[/]: {len(items)} item(s)")
    for item in items:
        console.print(
            f"  {short(item['id'])} [bold]{inert(item['status'])}[/]  {inert(item['content'])}",
            highlight=False,
        )
        console.print(
            f"    consolidation {short(item['consolidation_id'])} · version {short(item['node_version_id'])}",
            highlight=False,
        )
        transitions(item["history"])


def evidence(data: dict[str, Any]) -> None:
    console.print(f"[bold]evidence {data['id']}[/]  {inert(data['title'])}", highlight=False)
    console.print(f"  validity [bold]{inert(data['validity'])}[/] since {when(data['validity_changed_at'])}")
    console.print(f"  sha256 {data['sha256']} · {data['byte_size']} bytes {inert(data['media_type'])}")
    source = data["source_uri"] or ""
    console.print(f"  source {inert(data['source_kind'])} {inert(source)}".rstrip(), highlight=False)
    threads = ", ".join(f"{short(t['thread_id'])} ({inert(t['title'])})" for t in data["threads"])
    console.print(f"  threads: {threads or 'none'}", highlight=False)
    console.print(f"  validity history ({len(data['validity_history'])}):")
    transitions(data["validity_history"])
    if data["content"] is not None:
        console.print("  content:")
        for line in data["content"].splitlines()[:40]:
            console.print(f"    {inert(line)}", highlight=False)
    else:
        console.print("  content: (not fetched)")


def node_shown(data: dict[str, Any]) -> None:
    """A node version, its edges and each claim on it (run, type, confidence, rationale)."""
    console.print(
        f"[bold]node version {short(data['version_id'])}[/] (v{data['version_no']} of "
        f"{short(data['logical_node_id'])}), {inert(data['status'])}",
        highlight=False,
    )
    console.print(f"  {inert(data['content'])}", highlight=False)
    for edge in data["edges_out"]:
        console.print(f"  → {inert(edge['kind'])} {short(edge['to_version_id'])}", highlight=False)
    claims = data["claims"]
    console.print(f"  claims ({len(claims)}):", highlight=False)
    for claim in claims:
        rationale = " ".join(str(claim["rationale"]).split())
        console.print(
            f"    {short(claim['run_id'])} {inert(claim['claim_type']):9} {float(claim['confidence']):.2f}"
            + (f"  {inert(rationale[:200])}" if rationale else ""),
            highlight=False,
        )
    if data["citations"]:
        console.print(f"  citations: {len(data['citations'])}", highlight=False)


BUDGET_HELP = (
    "A budget in USD for this dispatch: every run is reserved (prompt and max output tokens at "
    "the model's price) before any is sent; over it, or over the thread's budget, nothing is sent."
)


CONTROLS_HELP = (
    "Deliberative and council only: each run of a round shown stances is also run as a control, the "
    "same profile on the blind briefing (no stances shown), so `council stances` can tell "
    "self-revision from conformity; control runs are never counted as support."
)


def reservation_line(reservation: Mapping[str, object]) -> str:
    """What a dispatch reserved, and the thread's budget after it, in one line."""
    thread = reservation["thread"]
    after = budget_line(thread) if isinstance(thread, Mapping) else ""
    return f"reserved ${reservation['usd']:.4f} before sending; thread {after}"


def budget_line(state: Mapping[str, object]) -> str:
    """A budget state in one line: the budget, spent, reserved and remaining (USD)."""
    if state["usd"] is None:
        return f"no budget; ${state['spent_usd']:.4f} spent, ${state['reserved_usd']:.4f} reserved"
    return (
        f"budget ${state['usd']:.4f}: ${state['spent_usd']:.4f} spent, "
        f"${state['reserved_usd']:.4f} reserved, ${state['remaining_usd']:.4f} remaining"
    )
