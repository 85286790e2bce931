"""A dispatch's reservation, taken in the dispatch's transaction under the thread's budget
lock before any run is enqueued (docs/guide/budgets.md; the arithmetic in
council.domain.budget). Refused: a one-line reason and nothing written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from uuid import UUID

from council.agents.pricing import price_per_token, request_tokens
from council.agents.runtimes.registry import is_api
from council.domain.budget import Estimate, Price, refusal, run_usd, runs_per_agent
from council.domain.profile import Profile
from council.domain.results.budgets import AgentReservation, Reservation
from council.domain.round_briefing import RoundBriefing
from council.errors import BudgetRefused
from council.ledger.budgets import shown_state
from council.services.in_tx.briefing import compile_for
from council.services.ports import Tx

DEFAULT_MAX_OUTPUT_TOKENS = 4096  # a profile stating neither expected output nor max_tokens
FREE = Price(Decimal(0), Decimal(0))


@dataclass(frozen=True)
class Plan:
    """What a dispatch will reserve once it is created."""

    thread_id: UUID
    estimates: tuple[Estimate, ...]
    dispatch_budget: Decimal | None
    thread_budget: Decimal | None

    @property
    def usd(self) -> Decimal:
        return sum((e.usd for e in self.estimates), Decimal(0))


def plan(
    tx: Tx,
    thread_id: UUID,
    profiles: Sequence[Profile],
    *,
    mode: str,
    rounds: int,
    proposal_id: UUID | None,
    dispatch_budget: Decimal | None,
    controls: bool = False,
    shared: RoundBriefing | None = None,
) -> Plan | None:
    """When a budget applies (the dispatch's own or the thread's), estimate every run, take
    the thread's budget lock (held to the end of the dispatch's transaction) and refuse the
    dispatch if it would overshoot either; None when no budget applies.

    The estimate (a compiled request, counted by the model's tokenizer: the first count in
    a process loads it) is made before the lock, so racing dispatches never queue behind
    one another's estimates; what is spent and reserved is read after it (READ COMMITTED:
    the statement after the lock sees every reservation committed before it)."""
    if dispatch_budget is None and tx.budgets.state(thread_id)["usd"] is None:
        tx.budgets.lock(thread_id)  # none a moment ago: look again under the lock
        if tx.budgets.state(thread_id)["usd"] is None:
            return None
    runs = runs_per_agent(rounds, controls=controls, mode=mode)
    estimates = tuple(
        _estimate(tx, p, thread_id, profiles, mode, rounds, proposal_id, runs, shared) for p in profiles
    )
    tx.budgets.lock(thread_id)
    state = tx.budgets.state(thread_id)
    thread_budget = state["usd"]
    found = Plan(thread_id, estimates, dispatch_budget, thread_budget)
    why = refusal(
        found.usd,
        dispatch_budget=dispatch_budget,
        thread_budget=thread_budget,
        spent=state["spent_usd"],
        reserved=state["reserved_usd"],
    )
    if why is not None:
        raise BudgetRefused(f"budget: the dispatch is refused, nothing was sent: {why}")
    return found


def reserve(tx: Tx, dispatch_id: UUID, found: Plan) -> Reservation:
    """Record the plan's reservation for the created dispatch (still under the lock)."""
    tx.budgets.reserve(
        dispatch_id,
        found.thread_id,
        found.estimates,
        dispatch_budget=found.dispatch_budget,
        thread_budget=found.thread_budget,
    )
    return Reservation(
        usd=float(found.usd),
        budget_usd=None if found.dispatch_budget is None else float(found.dispatch_budget),
        agents=[
            AgentReservation(
                agent=e.agent,
                model=e.model,
                runs=e.runs,
                prompt_tokens=e.prompt_tokens,
                max_output_tokens=e.max_output_tokens,
                run_usd=float(e.run_usd),
            )
            for e in found.estimates
        ],
        thread=shown_state(tx.budgets.state(found.thread_id)),
    )


def _estimate(
    tx: Tx,
    profile: Profile,
    thread_id: UUID,
    profiles: Sequence[Profile],
    mode: str,
    rounds: int,
    proposal_id: UUID | None,
    runs: int,
    shared: RoundBriefing | None,
) -> Estimate:
    """One agent's runs, estimated from the request its first run would send now: its
    compiled prompt's tokens by the model's tokenizer; a later round adds what the previous
    round's stances can add (every agent's expected answer; a control run sees none); each
    answer the profile's expected output. ``prompt_tokens`` is the mean over the agent's
    runs, so ``run_usd`` times ``runs`` is the agent's whole estimate."""
    price = FREE if profile.simulated else _price(profile)
    output = _expected_output(profile)
    compiled = compile_for(tx, profile, thread_id, mode=mode, proposal_id=proposal_id, shared=shared)
    request = compiled.canonical()
    if is_api(profile.runtime):
        prompt = request_tokens(profile.model, request["messages"], tools=request.get("tools"))
        # A request that offers read_evidence is expected to read once: the prompt sent again.
        calls = 2 if request.get("tools") else 1
    else:  # an agent CLI may call its model max_turns times
        prompt = request_tokens(profile.model, text=request.get("prompt") or "")
        calls = max(profile.max_turns or 1, 1)
    shown = sum(_expected_output(p) for p in profiles)  # a later round's stances, at most
    total = runs * prompt + (rounds - 1) * shown  # controls (the other runs) are shown none
    mean_prompt = -(-total // max(runs, 1))
    usd = run_usd(mean_prompt, output, price, calls)
    return Estimate(profile.name, profile.model, runs, mean_prompt, output, usd)


def _price(profile: Profile) -> Price:
    found = price_per_token(profile.model)
    if found is None:
        raise BudgetRefused(
            f"budget: agent {profile.name}'s model {profile.model} has no price in litellm's price map, "
            "so a budget cannot reserve for it; nothing was sent"
        )
    return Price(Decimal(str(found[0])), Decimal(str(found[1])))


def _expected_output(profile: Profile) -> int:
    """The output tokens a run of ``profile`` is reserved for: its stated
    ``expected_output_tokens``, else its output cap (``params.max_tokens``), else 4096."""
    if profile.expected_output_tokens:
        return profile.expected_output_tokens
    given = profile.params.get("max_tokens")
    return given if isinstance(given, int) and given > 0 else DEFAULT_MAX_OUTPUT_TOKENS
