"""Asking the council as a person would (`council ask`): the question opens a thread
(or is asked on one, recorded as its event ``thread.question_asked``, so every later
briefing carries it), its evidence is attached, and one council dispatch runs the council
protocol — each agent proposes blind, cross-reviews blind, then ``rounds`` deliberative
rounds (docs/architecture.md §7, ``council.domain.protocol``); :func:`outcome` then reads
what the council concluded, its answer first.

Everything that can be refused is checked before anything is written: the question,
the rounds, the agents' profiles (and the simulation policy), the thread when one is
given, and each evidence source (files are read and URLs fetched first). The thread, its
evidence and the dispatch (with its budget reservation, refused when it would overshoot)
are then written in one transaction, so a refusal writes nothing; its runs are sent once
it commits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from council.adapters.scheduler import Scheduler
from council.agents.profiles import refuse_simulation, resolve_many, simulation_mode
from council.domain import validate as v
from council.domain.alternatives import ASKED, option_content, parse_options
from council.domain.answer import LIVE_STATUSES, Candidate, answer_groups, answer_of, summaries
from council.domain.budget import budget_usd
from council.domain.commands import IdRef, NewNode
from council.domain.protocol import check_rounds
from council.domain.results.ask import AskOutcome, FailedRun, Proposition, Stance
from council.domain.results.consolidation import RuleReason
from council.domain.results.graph import Claim
from council.domain.results.runs import Cost, Dispatched, DispatchedRun
from council.domain.review import parse_review
from council.domain.rules import evaluate
from council.errors import BadInput
from council.services.dispatch import dispatch_runs, send
from council.services.evidence import EvidenceInput
from council.services.in_tx.dispatching import create_in
from council.services.lists import show_dispatch
from council.services.ports import Tx, UnitOfWork

QUESTION_ASKED = "thread.question_asked"  # a question asked on an existing thread (its event)


@dataclass(frozen=True)
class Question:
    text: str
    agents: tuple[str, ...]
    rounds: int = 2  # deliberative rounds after the proposing and cross-review rounds
    thread: IdRef | None = None
    evidence: tuple[EvidenceInput, ...] = ()
    budget_usd: float | str | None = None  # the dispatch's own budget (the thread's applies too)
    controls: bool = False  # each deliberative run also run blind as a control (never support)
    options: tuple[str, ...] = ()  # LABEL=TEXT: a multiple-choice question (one alternative set)


@dataclass(frozen=True)
class Asked:
    thread_id: UUID
    created_thread: bool
    evidence_ids: list[UUID]
    dispatch: Dispatched
    options: tuple[UUID, ...] = ()  # the options' node versions, in order


def ask(
    uow: UnitOfWork, scheduler: Scheduler, question: Question, *, actor: str, simulate: str | None = None
) -> Asked:
    text = v.text(question.text, "question", v.MAX_OBJECTIVE)
    total = check_rounds("council", question.rounds)
    if not question.agents:
        raise BadInput("--agents names no agent")
    simulation = simulation_mode(simulate)
    profiles = resolve_many(question.agents, simulation)
    refuse_simulation(profiles, simulation)
    dispatch_budget = budget_usd(question.budget_usd)
    options = parse_options(question.options)
    sources = [(given.source(), given.title) for given in question.evidence]  # read and fetched first
    with uow() as tx:
        if question.thread is None:
            title = " ".join(text.split())
            made = tx.threads.create(
                title=title if len(title) <= 120 else title[:119] + "…",
                objective=text,
                actor=actor,
                review=parse_review("auto"),
                rule_set_id=tx.rule_sets.exclusive() if options else None,
            )
            thread_id = made.id
        else:
            thread_id = tx.resolve("thread", question.thread)
            tx.threads.get(thread_id)
            tx.events.append(QUESTION_ASKED, actor=actor, thread_id=thread_id, payload={"question": text})
        option_versions = _add_options(tx, thread_id, options, actor) if options else ()
        evidence_ids = [
            tx.evidence.add(thread_id=thread_id, source=source, title=title, actor=actor).id
            for source, title in sources
        ]
        dispatched = create_in(
            tx,
            thread_id,
            profiles,
            mode="council",
            rounds=total,
            actor=actor,
            dispatch_budget=dispatch_budget,
            controls=question.controls,
        )
    created = send(uow, scheduler, dispatched, profiles, simulation)
    return Asked(thread_id, question.thread is None, evidence_ids, created, option_versions)


def _add_options(tx: Tx, thread_id: UUID, options: Sequence[tuple[str, str]], actor: str) -> tuple[UUID, ...]:
    """The options as open nodes of the thread, recorded as one alternative set (before the
    dispatch, in its transaction). A thread whose rule set lets rivals both consolidate is refused."""
    rule_set = tx.rule_sets.get(tx.threads.get(thread_id).rule_set_id)
    if not rule_set.body.get("exclusive_alternatives"):
        raise BadInput(
            f"--option needs a thread whose rule set makes alternatives exclusive; thread {thread_id} is "
            f"pinned to {rule_set.id} (ask without --thread opens one pinned to {tx.rule_sets.exclusive()})"
        )
    made = [
        tx.nodes.add(NewNode(thread=thread_id, content=option_content(label, body)), actor=actor)
        for label, body in options
    ]
    tx.alternatives.add_options(
        thread_id,
        [(m.logical_node_id, label) for m, (label, _) in zip(made, options, strict=True)],
        origin=ASKED,
        actor=actor,
    )
    return tuple(m.version_id for m in made)


def pending_consolidation(uow: UnitOfWork, thread_id: UUID) -> int:
    """Heads of the thread that the rules would consolidate now but that hold no live
    consolidation yet: the committer's work still to come (0: settled)."""
    with uow() as tx:
        graph = tx.graph.of_thread(thread_id)
        live = {c.node_version_id for c in graph.consolidations if c.status == "live"}
        pending = 0
        for node in graph.nodes:
            head = node.head_version_id
            if head is None or head in live:
                continue
            if not any(ver.version_id == head and ver.claims for ver in node.versions):
                continue
            if evaluate(tx.consolidations.current_snapshot(head)).positive:
                pending += 1
        return pending


def outcome_now(uow: UnitOfWork, dispatch: IdRef) -> AskOutcome:
    """A dispatch's outcome as it stands (the HTTP poll): settled once every run ended and
    the committer has decided what it can."""
    shown = show_dispatch(uow, dispatch)
    dispatch_id, thread_id = shown.id, shown.thread_id
    runs = dispatch_runs(uow, dispatch_id)
    ended = bool(runs) and all(r.status in ("succeeded", "failed") for r in runs)
    return outcome(uow, thread_id, dispatch_id, settled=ended and pending_consolidation(uow, thread_id) == 0)


def outcome(uow: UnitOfWork, asked_thread: UUID, dispatch_id: UUID, *, settled: bool) -> AskOutcome:
    """What the council concluded on the propositions this dispatch's runs judged: its answer
    first (``council.domain.answer``: the established proposition, or none, and the live
    alternatives), each agent's own summary, then every proposition and why it did or did not
    consolidate, failures and cost."""
    runs = dispatch_runs(uow, dispatch_id)
    by_run = {r.id: r for r in runs}
    with uow() as tx:
        thread = tx.threads.get(asked_thread)
        graph = tx.graph.of_thread(asked_thread)
        live = {c.node_version_id: c for c in graph.consolidations if c.status == "live"}
        budget = tx.budgets.of_thread(asked_thread).state
        reservation = tx.budgets.of_dispatch(dispatch_id, asked_thread)
        propositions = []
        candidates = []
        agent_of = {str(r.id): r.agent for r in runs}
        in_sets = {m.logical_node_id for found in graph.alternative_sets for m in found.members}
        for node in graph.nodes:
            head = node.head_version_id
            if head is None:
                continue
            snapshot = tx.consolidations.current_snapshot(head)
            judged = any(UUID(c["run_id"]) in by_run for c in snapshot["claims"])
            if not judged and node.logical_node_id not in in_sets:
                continue  # not judged by this ask, and no rival of what it judged
            stored = live.get(head)
            groups = answer_groups(snapshot, agent_of)
            version = next(ver for ver in node.versions if ver.version_id == head)
            if version.status in LIVE_STATUSES:
                candidates.append(
                    Candidate(
                        version_id=head,
                        content=version.content,
                        consolidated=stored is not None,
                        created_at=version.created_at,
                        support_groups=tuple(g for g in groups if g.kind == "support"),
                        dispute_groups=tuple(g for g in groups if g.kind == "dispute"),
                    )
                )
            if not judged:
                continue
            if stored is not None:
                reasons = [RuleReason(**r) for r in tx.consolidations.show(stored.id).decision["reasons"]]
            else:
                reasons = [RuleReason(**r.as_dict()) for r in evaluate(snapshot).reasons]
            propositions.append(
                Proposition(
                    version_id=head,
                    content=version.content,
                    consolidated=stored is not None,
                    consolidation_id=None if stored is None else stored.id,
                    why=_why(stored is not None, reasons),
                    reasons=reasons,
                    contested=any(g.kind == "dispute" for g in groups),
                    groups=groups,
                    stances=_stances(tx.nodes.show(head).claims, by_run),
                )
            )
        contradicts = [(e.from_version_id, e.to_version_id) for e in graph.edges if e.kind == "contradicts"]
        heads = {n.logical_node_id: n.head_version_id for n in graph.nodes if n.head_version_id is not None}
        sets = [
            [heads[m.logical_node_id] for m in a.members if m.logical_node_id in heads]
            for a in graph.alternative_sets
        ]
        said = summaries([_last_answer(tx, r) for r in _last_runs(runs)])
    failures = [
        FailedRun(run_id=r.id, agent=r.agent, round=r.round, error=r.error)
        for r in runs
        if r.status == "failed"
    ]
    agents = sorted({r.agent for r in runs})
    council = [r for r in runs if r.control_of is None]  # an agent answered when its council runs did
    answered = sum(1 for a in agents if all(r.status == "succeeded" for r in council if r.agent == a))
    short = str(asked_thread)[:8]
    return AskOutcome(
        answer=answer_of(candidates, contradicts, sets),
        summaries=said,
        thread_id=asked_thread,
        question=thread.objective,
        dispatch_id=dispatch_id,
        agents=agents,
        rounds=max((r.round for r in runs), default=0),
        complete=all(r.status in ("succeeded", "failed") for r in runs),
        settled=settled,
        answered=answered,
        failed=len(failures),
        propositions=propositions,
        contested=[p.version_id for p in propositions if p.contested],
        failures=failures,
        cost=Cost.of(runs),
        budget=budget,
        runs=runs,
        next=[
            f"council node list --thread {short}",
            f"council dispatch show {str(dispatch_id)[:8]}",
            f"council stances --thread {short}",
            f"council reentry --thread {short}",
        ],
        reservation=reservation,
    )


def _last_runs(runs: Sequence[DispatchedRun]) -> list[DispatchedRun]:
    """Each agent's last council run that answered (controls aside)."""
    last: dict[str, DispatchedRun] = {}
    for run in runs:
        answered = run.status == "succeeded" and run.control_of is None
        if answered and (run.agent not in last or last[run.agent].round < run.round):
            last[run.agent] = run
    return [last[a] for a in sorted(last)]


def _last_answer(tx: Tx, run: DispatchedRun) -> tuple[str, UUID, int, str]:
    kept = tx.answers.of_run(run.id)
    return run.agent, run.id, run.round, kept[-1].text if kept else ""


def _why(consolidated: bool, reasons: list[RuleReason]) -> str:
    if consolidated:
        held = [r.detail for r in reasons if r.rule in ("independent_support", "provider_diversity")]
        return "consolidated: " + "; ".join(held or [r.detail for r in reasons][:1])
    failed = [f"{r.rule}: {r.detail}" for r in reasons if not r.ok]
    return "not consolidated: " + (
        "; ".join(failed) if failed else "every rule holds; the committer has not run yet"
    )


def _stances(claims: Sequence[Claim], by_run: dict[UUID, DispatchedRun]) -> list[Stance]:
    last: dict[str, Stance] = {}
    for claim in claims:
        run = by_run.get(claim.run_id)
        if run is None or run.control_of is not None:  # a control run's stance is not the council's
            continue
        rationale = " ".join(claim.rationale.split())
        stance = Stance(
            agent=run.agent,
            run_id=run.id,
            round=run.round,
            claim_type=claim.claim_type,
            confidence=claim.confidence,
            rationale=rationale if len(rationale) <= 200 else rationale[:199] + "…",
        )
        if run.agent not in last or last[run.agent].round <= stance.round:
            last[run.agent] = stance
    return [last[a] for a in sorted(last)]
