"""What a dispatch reserves under a budget, and whether it fits (pure; docs/guide/budgets.md).

A run is reserved at what it is expected to cost, at its model's price per token:
``prompt_tokens`` (the compiled first-round request, counted by the model's tokenizer; a
later round adds every agent's expected answer, the most the previous round's stances can
add, averaged over the agent's runs) plus the profile's expected output tokens, times the
calls it is expected to make (two when it is offered evidence to read; an agent CLI may
call the model ``max_turns`` times). Sums are in Decimal, rounded up to the micro-dollar.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_UP, Decimal

from council.domain.protocol import stance_rounds
from council.errors import BadInput

MICRO = Decimal("0.000001")


@dataclass(frozen=True)
class Price:
    input_per_token: Decimal
    output_per_token: Decimal


@dataclass(frozen=True)
class Estimate:
    """One agent's share of a dispatch: ``runs`` runs at ``run_usd`` each."""

    agent: str
    model: str
    runs: int
    prompt_tokens: int
    max_output_tokens: int
    run_usd: Decimal

    @property
    def usd(self) -> Decimal:
        return self.run_usd * self.runs


def prompt_tokens(text: str) -> int:
    """An upper estimate of the tokens ``text`` takes (one per 3 bytes of UTF-8, rounded up)."""
    return -(-len(text.encode("utf-8")) // 3)


def runs_per_agent(rounds: int, *, controls: bool = False, mode: str = "deliberative") -> int:
    """An agent's runs in a dispatch of ``rounds`` rounds in all: one a round, and with controls
    one control run for each round that is shown stances (a deliberative dispatch's rounds
    after the first, a council's after its two blind ones)."""
    return rounds + (stance_rounds(mode, rounds) if controls else 0)


def run_usd(prompt: int, max_output: int, price: Price, turns: int = 1) -> Decimal:
    cost = (price.input_per_token * prompt + price.output_per_token * max_output) * max(turns, 1)
    return cost.quantize(MICRO, rounding=ROUND_UP)


def refusal(
    wanted: Decimal,
    *,
    dispatch_budget: Decimal | None,
    thread_budget: Decimal | None,
    spent: Decimal,
    reserved: Decimal,
) -> str | None:
    """Why a dispatch reserving ``wanted`` cannot be taken (None: it fits both budgets)."""
    if dispatch_budget is not None and wanted > dispatch_budget:
        return f"its runs are estimated at up to ${wanted:.6f}, over --budget-usd ${dispatch_budget:.6f}"
    if thread_budget is not None and spent + reserved + wanted > thread_budget:
        left = max(thread_budget - spent - reserved, Decimal(0))
        return (
            f"its runs are estimated at up to ${wanted:.6f}, and the thread's budget of ${thread_budget:.6f} "
            f"has ${left:.6f} left (${spent:.6f} spent, ${reserved:.6f} reserved)"
        )
    return None


def budget_usd(value: float | str | Decimal | None, what: str = "--budget-usd") -> Decimal | None:
    """A budget as given (None: none); refused unless a finite amount of at least 0."""
    if value is None:
        return None
    try:
        amount = Decimal(str(value))
    except ArithmeticError:
        raise BadInput(f"{what} must be an amount in USD, got {value!r}") from None
    if not amount.is_finite() or amount < 0 or amount >= Decimal("1000000"):
        raise BadInput(f"{what} must be between 0 and 1000000 USD, got {value}")
    return amount.quantize(Decimal("0.000001"))
