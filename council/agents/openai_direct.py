"""The OpenAI-compatible path of the gateway without litellm's wrapper (issue 36).

For a profile on litellm's ``openai/`` provider with its own ``api_base`` (a local or
hosted OpenAI-compatible server), litellm's ``completion`` maps no parameter and calls
the OpenAI SDK's ``chat.completions.create``; around that call it spends about 3.6 ms of
the calling thread (parameter mapping, model-info and price lookups, its logging object,
the response's conversion) and hands a success handler to a thread of its own
(docs/benchmarks-worker-profile.md, "The model call"). :func:`create` makes the same
request with the SDK directly, on one client per endpoint and key, kept for the process.

It is taken only where litellm would send exactly the same request (:func:`takes`): the
``openai/`` provider with an ``api_base``, a model litellm treats as a plain chat model
(not an o-series or GPT-5 model, whose parameters it renames), and call parameters it
passes through unchanged. Anything else goes through litellm. The gateway classifies the
SDK's errors as it classifies litellm's (litellm's are the SDK's subclasses), and prices
the answer from litellm's price map (``price``), as litellm does.

``COUNCIL_OPENAI_DIRECT=0`` sends every call through litellm.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion

PROVIDER_PREFIX = "openai/"
# The call parameters litellm's OpenAI-compatible path sends as they are (its
# OpenAIGPTConfig for a model it has no special config for); ``timeout`` is the client's.
PASSED = frozenset(
    {"temperature", "top_p", "max_tokens", "stop", "seed", "presence_penalty", "frequency_penalty", "timeout"}
)
# Models litellm maps parameters for (o-series, GPT-5: max_tokens -> max_completion_tokens,
# temperature dropped): they keep going through litellm.
_RENAMED = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)

_lock = threading.Lock()
_clients: dict[tuple[str, str], openai.OpenAI] = {}
_unpriced: set[str] = set()


def takes(model: str, api_base: str | None, params: Mapping[str, object]) -> bool:
    """Whether the call goes to the SDK directly (else through litellm)."""
    if not api_base or not model.startswith(PROVIDER_PREFIX):
        return False
    name = model.removeprefix(PROVIDER_PREFIX)
    return bool(name) and not _RENAMED.match(name) and set(params) <= PASSED


def create(
    model: str,
    messages: Sequence[Mapping[str, object]],
    params: Mapping[str, object],
    *,
    api_base: str,
    api_key: str,
    tools: Sequence[Mapping[str, object]] | None,
) -> ChatCompletion:
    """One chat completion from the endpoint, one attempt (the SDK's retries off);
    the SDK's errors leave as they are, for the gateway to classify."""
    call = dict(params)
    timeout = call.pop("timeout")
    if tools:
        call["tools"] = tools
    # The stored request's messages and the profile's PASSED parameters, sent as they are
    # (the SDK types each; the gateway does not retype what it stores and hashes).
    completions = _client(api_base, api_key).chat.completions
    response: ChatCompletion = completions.create(  # type: ignore[call-overload]
        model=model.removeprefix(PROVIDER_PREFIX), messages=messages, timeout=timeout, **call
    )
    return response


def malformed(response: object) -> str | None:
    """Why the answer is not a chat completion the gateway can read (None: it is). The SDK
    builds its response without validating it, so a server's malformed 200 would reach the
    gateway as wrong types; litellm refuses the same answers as a provider error (HTTP 500),
    and so does the gateway on this route (the reasons are litellm's)."""
    choices = getattr(response, "choices", None)
    if choices is None:
        return "provider returned a response with no 'choices'"
    if not isinstance(choices, list):
        return f"provider returned 'choices' that is not a list ({type(choices).__name__})"
    if not choices:
        return None  # an empty answer, read as no text (as litellm returns it)
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    tool_calls = getattr(message, "tool_calls", None)
    readable = hasattr(message, "content") and isinstance(content, str | None)
    if not readable or not isinstance(tool_calls, list | None):
        return "invalid response object: its first choice has no readable message"
    return None


def price(model: str, usage: Mapping[str, int] | None) -> float | None:
    """The answer's cost in USD from litellm's price map for ``model``, as litellm prices
    the answer it returns; None for a model the map lacks (remembered: litellm searches
    the whole map for a resemblance before it says so)."""
    if usage is None or model in _unpriced:
        return None
    import litellm

    try:
        cost_in, cost_out = litellm.cost_per_token(
            model=model,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
        )
    except Exception:  # not in the price map: unpriced, not an error
        with _lock:
            _unpriced.add(model)
        return None
    return float(cost_in) + float(cost_out)


def _client(api_base: str, api_key: str) -> openai.OpenAI:
    """One client per endpoint and key, for the process (its connection pool reused)."""
    key = (api_base, api_key)
    found = _clients.get(key)
    if found is not None:
        return found
    import openai

    with _lock:
        found = _clients.get(key)
        if found is None:
            found = _clients[key] = openai.OpenAI(base_url=api_base, api_key=api_key, max_retries=0)
    return found
