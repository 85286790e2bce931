"""Use cases of outside agents, the council members that join over MCP
(docs/architecture.md §3 and §7, outside agents).

An outside agent *begins* a run and holds it: the run is ``running`` with the
agent's session as its holder until the agent submits its output, which goes
through the workers' own checked, fenced write path (:func:`apply_checked`).
Every read made *for a run* that serves stances — a non-blind packet, a node's
status with others' claims — records them as that run's exposures, channel
``mcp:<tool>``, in the same transaction that reads what it answers, so the
ledger holds what the agent was shown before the answer leaves. A blind read
records nothing: the run stays independent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from uuid import UUID

from pydantic import ValidationError

from council import config
from council.adapters.scheduler import Scheduler
from council.domain import validate as v
from council.domain.agent_output import AgentOutput
from council.domain.commands import IdRef, RecordedRun
from council.domain.requests import Exposure, packet_stances
from council.domain.results.consolidation import Evaluated, GroupShape, RuleReason
from council.domain.results.outside import NodeStatus, OutputSubmitted, PacketServed, RunBegun, StanceShown
from council.domain.rules import evaluate, group_dict, support_n_eff
from council.domain.snapshot import Snapshot
from council.errors import BadInput, CouncilError
from council.known_secrets import redact
from council.services.consolidation import consolidate_many
from council.services.in_tx.briefing import read_packet
from council.services.in_tx.output import apply_checked
from council.services.ports import Tx, UnitOfWork
from council.services.reentry import DEFAULT_BUDGET, check_budget


def begin_run(uow: UnitOfWork, recorded: RecordedRun, *, holder: str, actor: str) -> RunBegun:
    """A run of an outside agent, held by ``holder`` (its session) until it submits."""
    if recorded.exposed_to:
        raise BadInput("a begun run's exposures are what it is served, not declared")
    with uow() as tx:
        run = tx.runs.record(recorded, actor=actor, held_by=holder)
    return RunBegun.model_validate(run.model_dump())


def end_sessions(uow: UnitOfWork, holders: Sequence[str]) -> list[UUID]:
    """The sessions of ``holders`` ended: every run they began and never answered
    ends failed, with the reason, so no begun run stays in flight forever."""
    with uow() as tx:
        return tx.runs.abandon(
            holders,
            "the MCP session that began it ended (closed, dropped, or idle longer than "
            f"{config.MCP_SESSION_IDLE_ENV}) before it submitted an output",
        )


def packet_for_run(
    uow: UnitOfWork,
    thread: IdRef,
    *,
    run: IdRef | None,
    holder: str,
    blind: bool = True,
    budget: int = DEFAULT_BUDGET,
) -> PacketServed:
    """The reentry packet, for one of the holder's runs. A non-blind packet
    carries stances, so it is served only to a run and they are recorded as its
    exposures (``mcp:reentry_packet``) in the transaction that reads it."""
    check_budget(budget)
    if not blind and run is None:
        raise BadInput("a packet with stances is served to a run: name the run it is for (or read it blind)")
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        run_id = None if run is None else _held_in(tx, run, holder, thread_id)
        packet = read_packet(tx, thread_id, budget=budget, blind=blind)
        recorded = 0
        if run_id is not None and not blind:
            recorded = tx.runs.expose(run_id, _others(packet_stances(packet, "mcp:reentry_packet"), run_id))
    return PacketServed(run_id=run_id, exposures_recorded=recorded, packet=packet)


def node_status(uow: UnitOfWork, version: IdRef, *, run: IdRef | None, holder: str) -> NodeStatus:
    """A node version's groups with their claims and the reasons it is or is not
    consolidated. Others' claims are stances: served only to a run, and
    recorded as its exposures (``mcp:node_status``) in the transaction that reads
    them. Without a run: counts and reasons only."""
    with uow() as tx:
        version_id = tx.resolve("node version", version)
        shown = tx.nodes.show(version_id)
        run_id = None if run is None else _held_in(tx, run, holder, shown.thread_id)
        snapshot = tx.consolidations.current_snapshot(version_id)
        live = next(
            (
                c
                for c in tx.consolidations.history(version_id).consolidations
                if c.node_version_id == version_id and c.status == "live"
            ),
            None,
        )
        decision = evaluate(snapshot)
        stances: list[StanceShown] | None = None
        recorded = 0
        if run_id is not None:
            stances = _stances(snapshot, {c.id: c.rationale for c in shown.claims})
            served = [
                Exposure(
                    "stance",
                    "mcp:node_status",
                    exposed_to_run_id=str(s.run_id),
                    claim_id=str(s.claim_id),
                    node_version_id=str(version_id),
                )
                for s in stances
            ]
            recorded = tx.runs.expose(run_id, _others(served, run_id))
    groups = decision.groups
    return NodeStatus(
        node_version_id=version_id,
        logical_node_id=shown.logical_node_id,
        thread_id=shown.thread_id,
        content=shown.content,
        status=shown.status,
        consolidated=live is not None,
        consolidation_id=live.id if live is not None else None,
        outcome=decision.outcome,
        reasons=[RuleReason(**r.as_dict()) for r in decision.reasons],
        support_groups=sum(1 for g in groups if g.kind == "support"),
        dispute_groups=sum(1 for g in groups if g.kind == "dispute"),
        n_eff=support_n_eff(snapshot, groups),
        groups=None if run_id is None else [GroupShape(**group_dict(g)) for g in groups],
        claims=stances,
        run_id=run_id,
        exposures_recorded=recorded,
    )


def submit_output(
    uow: UnitOfWork,
    scheduler: Scheduler | None,
    run: IdRef,
    output: dict[str, object] | str,
    *,
    holder: str,
    actor: str = "mcp",
) -> OutputSubmitted:
    """The holder's run answers: the output contract checked, linted and written
    with the run's end in one transaction fenced on the run's attempt — exactly
    the workers' path — or, on any problem, the one-line reason and nothing
    written (the run stays the holder's, to answer again). Then every version it
    touched is decided by the committer: queued when a broker is configured,
    else at once."""
    parsed = parse_output(output)
    with uow() as tx:
        run_id = tx.resolve("run", run)
        held = tx.runs.held(run_id, holder)
        applied, _ = apply_checked(tx, held, int(held["attempt"]), parsed, actor=f"{actor}:{held['agent']}")
    touched = applied.touched_versions
    evaluations: list[Evaluated] = []
    queued: list[UUID] = []
    deferred = None
    if touched and scheduler is not None:
        try:
            scheduler.enqueue_evaluations(touched)
            queued = list(touched)
        except Exception as exc:  # the broker is away: the output is written, the sweep finds its claims
            deferred = f"not queued ({type(exc).__name__}); the sweep queues it"
    if touched and scheduler is None:
        try:
            evaluations = consolidate_many(uow, touched, actor=actor)
        except CouncilError as exc:  # the output is written: say so, and why it is not decided yet
            deferred = f"not decided yet ({' '.join(str(exc).split())}); a later evaluation decides it"
    return OutputSubmitted(
        run_id=run_id,
        status="succeeded",
        applied=applied,
        evaluations=evaluations,
        queued_evaluations=queued,
        evaluation_deferred=deferred,
    )


def parse_output(output: dict[str, object] | str) -> AgentOutput:
    """The agent-output contract (a JSON object, or its text), or one line saying where it breaks."""
    try:
        # known secrets out before anything of it is stored (an outside agent may have read one)
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return AgentOutput.model_validate_json(redact(text))
    except ValidationError as exc:
        raise BadInput(f"the output breaks the agent-output contract: {v.first_error(exc)}") from None


def _stances(snapshot: Snapshot, rationales: dict[UUID, str]) -> list[StanceShown]:
    """Every claim the decision reads (the snapshot's, so they match the groups), attributed.
    Rationales come from the claims as shown (a claim made since has none here)."""
    runs = {str(r["id"]): r for r in snapshot["runs"]}
    cites: dict[str, list[UUID]] = {}
    for citation in snapshot["citations"]:
        if citation.get("claim_id") is not None:
            cites.setdefault(str(citation["claim_id"]), []).append(UUID(str(citation["evidence_id"])))
    return [
        StanceShown(
            claim_id=c["id"],
            run_id=c["run_id"],
            agent=runs[str(c["run_id"])]["agent"],
            provider=runs[str(c["run_id"])]["provider"],
            type=c["type"],
            confidence=float(c["confidence"]),
            rationale=rationales.get(UUID(str(c["id"])), ""),
            cites=cites.get(str(c["id"]), []),
        )
        for c in snapshot["claims"]
    ]


def _held_in(tx: Tx, run: IdRef, holder: str, thread_id: UUID) -> UUID:
    """The id of one of the holder's begun runs, on ``thread_id``; bad input otherwise."""
    run_id = tx.resolve("run", run)
    held = tx.runs.held(run_id, holder)
    if held["thread_id"] != thread_id:
        raise BadInput(f"run {run_id} is on thread {held['thread_id']}, not {thread_id}")
    return run_id


def _others(exposures: list[Exposure], run_id: UUID) -> list[Exposure]:
    """Stances of other runs, each once (a run is not exposed to itself)."""
    seen: set[tuple[object, ...]] = set()
    kept: list[Exposure] = []
    for e in exposures:
        key = (e.exposed_to_run_id, e.claim_id)
        if e.exposed_to_run_id != str(run_id) and key not in seen:
            seen.add(key)
            kept.append(e)
    return kept
