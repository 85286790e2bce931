"""A run's briefing read in the caller's transaction: the reentry packet and the
request compiled from it (the preview, the worker's claim and an outside agent's
packet share them, so their hashes match)."""

from __future__ import annotations

from uuid import UUID

from council import config
from council.agents.compiler import compile_request
from council.agents.runtimes.registry import is_api
from council.domain.profile import Profile
from council.domain.reentry import ReentryPacket, build_packet
from council.domain.requests import CompiledRequest
from council.ledger.run_rows import RoundStance
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
) -> CompiledRequest:
    """The request a run of ``profile`` would send now, read in the caller's
    transaction (the preview and the worker both call this); a review run is
    also shown the proposal it votes on. ``thread_known``: the thread is that of
    a run this transaction holds (not looked up again). ``control``: a control run of a
    deliberative round, compiled on the blind briefing of its round (the previous round's
    stances are not shown, so none is recorded as its exposure)."""
    # The event high-water mark moves with every event of the thread (the dispatch itself, a
    # sibling run starting), not with what the briefing says; in the request it would make a
    # preview never hash to the request its run stores.
    packet = read_packet(
        tx, thread_id, budget=BRIEFING_BUDGET, blind=True, thread_known=thread_known
    ).model_copy(update={"high_water_event_id": None})
    stances: list[RoundStance] = []
    if mode == "deliberative" and round_no > 1 and dispatch_id is not None and not control:
        stances = tx.runs.previous_round_stances(dispatch_id, round_no - 1)
    proposal = dict(tx.retractions.briefing(proposal_id)) if mode == "review" and proposal_id else None
    texts = (
        tx.evidence.contents([e.id for e in packet.evidence])
        if is_api(profile.runtime) and packet.evidence
        else None
    )
    return compile_request(
        profile,
        packet,
        mode=mode,
        round_no=round_no,
        previous_round=stances,
        proposal=proposal,
        evidence_texts=texts,
        inline_tokens=config.inline_evidence_tokens(),
        tool_turns=config.evidence_tool_turns(),
    )
