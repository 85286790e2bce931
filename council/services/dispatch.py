"""Use cases of dispatching a council: create runs (pinned) then enqueue them;
compile the request a run would send (the preview and the worker share it);
list the profiles as they would run here.

Dispatch resolves each profile once, where it is dispatched, and pins it on
the run (``agent_runs.executor``): what runs is what the run says will run.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from council.adapters.scheduler import NotDelivered, Scheduler
from council.agents.profiles import load_profiles, refuse_simulation, resolve, resolve_many, simulation_mode
from council.domain.budget import budget_usd as parse_budget
from council.domain.commands import IdRef
from council.domain.profile import Profile
from council.domain.protocol import CONTROLLED_MODES, CONTROLS_REFUSED, check_rounds
from council.domain.results.runs import (
    Dispatched,
    DispatchedRun,
    ExecutorShown,
    Preview,
    PreviewExposure,
    Profiles,
    ProfileShown,
)
from council.domain.reviewers import Reviewers
from council.errors import BadInput
from council.services.in_tx.briefing import compile_for
from council.services.in_tx.dispatching import Made, create_in
from council.services.ports import UnitOfWork
from council.settings import settings


def dispatch(
    uow: UnitOfWork,
    scheduler: Scheduler,
    thread: IdRef,
    agents: Sequence[str],
    *,
    mode: str,
    rounds: int,
    actor: str,
    proposal: IdRef | None = None,
    once_per_proposal: bool = False,
    simulate: str | None = None,
    reviewers: Reviewers | None = None,
    key: str | None = None,
    budget_usd: float | str | None = None,
    controls: bool = False,
) -> Dispatched:
    """Create the runs in Postgres first, each pinned to its executor, then
    enqueue them (nothing, when ``once_per_proposal`` finds the proposal's
    review already dispatched). ``simulate``: auto, always or never (else
    ``COUNCIL_SIMULATE``); under never, a dispatch that would simulate any
    profile is refused and writes nothing. ``reviewers``: how an automatic
    review's agents were chosen (recorded in the dispatch's event). ``key``: an
    idempotency key; a retry with it (the same request: budget and simulation mode included)
    returns the first dispatch and creates nothing; another request under it is refused.
    ``budget_usd``: the dispatch's own budget. Under it, or under the thread's budget, every
    run is reserved in the dispatch's transaction, under the thread's budget lock, before
    any is enqueued; a dispatch that would overshoot either is refused and writes nothing.
    ``rounds``: the dispatch's rounds, except under ``mode`` council, where it counts the
    deliberative rounds after the proposing and cross-review ones (docs/architecture.md §7,
    ``council.domain.protocol``). ``controls`` (deliberative and council only, else refused
    before anything is written): each run of a round shown stances is paired with a control
    run, the same profile on the blind briefing, which is reserved under a budget like any
    run and never counted as support.

    The runs are committed before they are sent (the ledger is the outbox): when the
    broker cannot take them, the dispatch still stands, ``delivery`` says ``deferred``
    with the reason, and the sweep sends them once the broker is back."""
    if controls and mode not in CONTROLLED_MODES:
        raise BadInput(CONTROLS_REFUSED)
    total = check_rounds(mode, rounds)
    simulation = simulation_mode(simulate)
    profiles = resolve_many(agents, simulation)
    refuse_simulation(profiles, simulation)
    dispatch_budget = parse_budget(budget_usd)
    with uow() as tx:
        made = create_in(
            tx,
            tx.resolve("thread", thread),
            profiles,
            mode=mode,
            rounds=total,
            actor=actor,
            proposal=proposal,
            once_per_proposal=once_per_proposal,
            reviewers=reviewers,
            key=key,
            dispatch_budget=dispatch_budget,
            controls=controls,
            simulation=simulation,
        )
    return send(uow, scheduler, made, profiles, simulation)


def send(
    uow: UnitOfWork, scheduler: Scheduler, made: Made, profiles: Sequence[Profile], simulation: str
) -> Dispatched:
    """Enqueue what a committed dispatch has to send (its runs are the outbox)."""
    dispatch_id, run_ids, to_send = made.dispatch_id, made.run_ids, made.to_send
    delivery, deferred_reason = "none", None
    if to_send:
        with uow() as tx:
            tx.runs.mark_queued(to_send)
        try:
            scheduler.enqueue_runs(to_send)
            delivery = "sent"
        except NotDelivered as exc:
            delivery, deferred_reason = "deferred", f"{exc}; the sweep sends them when it is back"
    return Dispatched(
        dispatch_id=dispatch_id,
        run_ids=run_ids,
        agents=[p.name for p in profiles],
        simulated=[p.name for p in profiles if p.simulated],
        simulation=simulation,
        executors={
            p.name: ExecutorShown(model=p.model, provider=p.provider, simulated=p.simulated, why=p.why)
            for p in profiles
        },
        mode=made.mode,
        rounds=made.rounds,
        already_dispatched=made.already and not made.replayed,
        idempotency_key=made.key,
        replayed=made.replayed,
        delivery=delivery,
        deferred_reason=deferred_reason,
        reservation=made.reservation,
        controls=made.controls,
    )


def dispatch_runs(uow: UnitOfWork, dispatch_id: UUID) -> list[DispatchedRun]:
    """The dispatch's runs as they stand (round, agent, status, attempt)."""
    with uow() as tx:
        return tx.runs.of_dispatch(dispatch_id)


def preview(uow: UnitOfWork, thread: IdRef, agent: str, *, mode: str = "independent") -> Preview:
    """Exactly the request a first-round run of ``agent`` would send now, and its hash."""
    if mode not in ("independent", "review", "council"):
        raise BadInput("preview compiles a first-round request: mode independent, council or review")
    profile = resolve(agent)
    with uow() as tx:
        compiled = compile_for(tx, profile, tx.resolve("thread", thread), mode=mode)
    return Preview(
        request=compiled.canonical(),
        request_sha256=compiled.sha256,
        simulated=profile.simulated,
        provider=profile.provider,
        executor=profile.pinned(),
        exposures=[PreviewExposure(**e.__dict__) for e in compiled.exposures],
        input_features=compiled.input_features,
    )


def profiles(simulate: str | None = None) -> Profiles:
    """Each profile: runtime, model, provider family, endpoint, key variable, and
    whether a dispatch here would run it real or simulated, and why."""
    mode = simulation_mode(simulate)
    return Profiles(simulation=mode, profiles=[_shown(p) for p in load_profiles(mode).values()])


def _shown(profile: Profile) -> ProfileShown:
    own = profile.stands_in_for or {"runtime": profile.runtime, "model": profile.model}
    return ProfileShown(
        name=profile.name,
        runtime=own["runtime"],
        model=own["model"],
        runs_as=profile.model,
        provider=profile.provider,
        api_base=profile.api_base,
        api_key_env=profile.api_key_env,
        key_set=bool(settings().variable(profile.api_key_env)) if profile.api_key_env else None,
        params=dict(profile.params),
        max_turns=profile.max_turns,
        timeout_s=profile.timeout_s,
        simulated=profile.simulated,
        why=profile.why,
        cli_version=profile.cli_version,
    )
