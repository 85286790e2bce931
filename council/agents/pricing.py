"""What a call costs and what a request weighs, from litellm's local price map and
tokenizers (never fetched: ``LITELLM_LOCAL_MODEL_COST_MAP``). The gateway prices each
answer with these (``council.agents.gateway``); a budget's reservation counts a compiled
request's tokens and prices it (``council.services.in_tx.budget``); an agent CLI's
reported tokens are priced after its run (docs/guide/budgets.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import ModuleType

from council.agents import openai_direct
from council.settings import export


def _litellm() -> ModuleType:
    export("LITELLM_LOCAL_MODEL_COST_MAP", "True", overwrite=False)
    import litellm

    return litellm


def unpriced_reason(model: str, usage: Mapping[str, int] | None) -> str:
    """Why a call of ``model`` has no cost: the provider reported no token counts, or
    litellm's price map has no price for the model."""
    if not usage:
        return "the provider reported no token usage"
    return f"no price for {model} in litellm's price map"


def price(model: str, usage: Mapping[str, int] | None) -> float | None:
    """What ``usage`` (prompt and completion tokens) of ``model`` costs in USD; None when
    litellm's price map has no price for the model or there is no usage."""
    _litellm()
    return openai_direct.price(model, usage)


def price_per_token(model: str) -> tuple[float, float] | None:
    """The model's price in USD per input and per output token in litellm's local price
    map (what a budget reserves at); None when litellm has no price for it."""
    litellm = _litellm()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # not in the price map: unpriced, not an error
        return None
    cost_in, cost_out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if not isinstance(cost_in, int | float) or not isinstance(cost_out, int | float):
        return None
    return float(cost_in), float(cost_out)


def request_tokens(
    model: str,
    messages: Sequence[Mapping[str, object]] | None = None,
    *,
    text: str = "",
    tools: Sequence[Mapping[str, object]] | None = None,
) -> int:
    """The input tokens a request takes for ``model``: its messages and tools (an API
    request) or its prompt ``text`` (an agent CLI's), by litellm's tokenizer for the model
    (tiktoken's for a model it has none for); one token per 3 bytes of UTF-8 where the
    counter cannot read the request."""
    litellm = _litellm()
    try:
        if messages is not None:
            return int(litellm.token_counter(model=model, messages=list(messages), tools=tools or None))
        return int(litellm.token_counter(model=model, text=text))
    except Exception:  # a message shape the counter does not read: the byte estimate
        shown = text if messages is None else json.dumps([messages, tools], ensure_ascii=False, default=str)
        return -(-len(shown.encode("utf-8")) // 3)
