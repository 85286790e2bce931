"""A run's briefing read in the caller's transaction: the reentry packet, the shared part of
a round's briefing, and the request compiled from it (the preview, the worker's claim and an
outside agent's packet share them, so their hashes match).

A round is simultaneous (docs/architecture.md §7): its shared briefing is compiled once,
when the round opens — round 1 in the dispatch's transaction (:func:`council.services.in_tx.
dispatching.create_in`), a later one where ``next_round`` creates it
(:func:`council.services.rounds.open_next_round`) — and stored; every run of the round
compiles its request from that plus its own agent (:func:`compile_for`), so a run that a
worker takes late is shown exactly what the first was.
"""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from council import config
from council.agents.compiler import compile_request
from council.agents.runtimes.registry import is_api
from council.domain.profile import Profile
from council.domain.protocol import phase, shows_stances
from council.domain.reentry import ReentryPacket, build_packet
from council.domain.requests import CompiledRequest
from council.domain.round_briefing import RoundBriefing, ShownProposal, ShownStance
from council.services.ports import Tx

BRIEFING_BUDGET = 6000


def read_packet(
    tx: Tx, thread_id: UUID, *, budget: int, blind: bool, thread_known: bool = False
) -> ReentryPacket:
    """The packet inside the caller's transaction (the compiler's briefing reads it so).
    ``thread_known``: the caller has the thread from a row of this transaction (a claimed
    run's), so it is not looked up again."""
    if not thread_known:
        tx.threads.get(thread_id)
    rows_cap = max(10, budget // 25)  # every item carries ids worth 25+ tokens: more could not fit
    return build_packet(tx.frontier.rows(thread_id, rows_cap=rows_cap), budget=budget, blind=blind)


def round_briefing(
    tx: Tx,
    thread_id: UUID,
    *,
    mode: str,
    round_no: int = 1,
    dispatch_id: UUID | None = None,
    proposal_id: UUID | None = None,
    thread_known: bool = False,
) -> RoundBriefing:
    """The shared part of round ``round_no``'s briefing as the thread stands now: the blind
    packet, the previous round's stances when the round is shown them, a review's proposal."""
    # The event high-water mark moves with every event of the thread (the dispatch itself, a
    # sibling run starting), not with what the briefing says; in the request it would make a
    # preview never hash to the request its run stores.
    packet = read_packet(
        tx, thread_id, budget=BRIEFING_BUDGET, blind=True, thread_known=thread_known
    ).model_copy(update={"high_water_event_id": None})
    stances: list[ShownStance] = []
    if shows_stances(mode, round_no) and dispatch_id is not None:
        stances = tx.runs.previous_round_stances(dispatch_id, round_no - 1)
    proposal = None
    if mode == "review" and proposal_id is not None:
        proposal = ShownProposal.model_validate(tx.retractions.briefing(proposal_id))
    return RoundBriefing(
        mode=mode,
        round=round_no,
        phase=phase(mode, round_no),
        packet=packet,
        previous_round=stances,
        proposal=proposal,
    )


def open_round(tx: Tx, dispatch_id: UUID, round_no: int) -> RoundBriefing:
    """Open round ``round_no`` of the dispatch: compile its shared briefing now and store it.
    A round opened already keeps the briefing it was opened with (returned)."""
    facts = tx.rounds.dispatch(dispatch_id)
    briefing = round_briefing(
        tx,
        facts.thread_id,
        mode=facts.mode,
        round_no=round_no,
        dispatch_id=dispatch_id,
        proposal_id=facts.proposal_id,
        thread_known=True,
    )
    if tx.rounds.store(dispatch_id, round_no, briefing):
        return briefing
    stored = tx.rounds.of_round(dispatch_id, round_no)
    if stored is None:
        raise RuntimeError(f"round {round_no} of dispatch {dispatch_id} has no briefing, nor could store one")
    return stored


def compile_for(
    tx: Tx,
    profile: Profile,
    thread_id: UUID,
    *,
    mode: str = "independent",
    round_no: int = 1,
    dispatch_id: UUID | None = None,
    proposal_id: UUID | None = None,
    thread_known: bool = False,
    control: bool = False,
    run_id: UUID | None = None,
    shared: RoundBriefing | None = None,
    evidence_texts: Mapping[str, str] | None = None,
) -> CompiledRequest:
    """The request a run of ``profile`` would send now, read in the caller's transaction (the
    preview and the worker both call this). A dispatch's run is compiled from its round's
    stored shared briefing (a round opened before the briefings were stored is opened by its
    first claim); without a dispatch (the preview, a budget's estimate) from ``shared`` or
    the thread as it stands, as round 1 of a dispatch of ``mode`` would be. ``run_id``: the run
    compiled, whose lineage's propositions a council's later round names as its own.
    ``thread_known``: the thread is that of a run this transaction holds (not looked up
    again). ``control``: a control run of a deliberative round, compiled on the blind
    briefing of its round (the previous round's stances are not shown, so none is recorded
    as its exposure). ``evidence_texts``: the text of the briefing's evidence, read already
    (by the claim, ``council_begin_run_v1``); else read here for an API run."""
    if shared is None and dispatch_id is not None:
        shared = tx.rounds.of_round(dispatch_id, round_no) or open_round(tx, dispatch_id, round_no)
    if shared is None:
        shared = round_briefing(
            tx, thread_id, mode=mode, round_no=round_no, proposal_id=proposal_id, thread_known=thread_known
        )
    own: list[str] = []
    if run_id is not None and shared.phase in ("cross_review", "deliberate") and shared.mode == "council":
        own = [str(v) for v in tx.rounds.lineage_versions(run_id)]
    packet = shared.packet
    texts = None
    if is_api(profile.runtime) and packet.evidence:
        texts = evidence_texts
        if texts is None:
            texts = tx.evidence.contents([e.id for e in packet.evidence])
    return compile_request(
        profile,
        shared.blind() if control else shared,
        own=own,
        evidence_texts=texts,
        inline_tokens=config.inline_evidence_tokens(),
        tool_turns=config.evidence_tool_turns(),
    )
