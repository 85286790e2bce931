"""Preloaded by the race's fork server (``tests.processes``): litellm, its local price
map and its tokenizer loaded once, so 64 racing dispatchers that price their models fork with it loaded
instead of each importing litellm (seconds of CPU apiece)."""

from __future__ import annotations

from council.agents.pricing import price_per_token, request_tokens

price_per_token("openai/gpt-4o-mini")
request_tokens("openai/gpt-4o-mini", [{"role": "user", "content": "warm"}])  # its tokenizer loaded
