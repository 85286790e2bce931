"""The LLM gateway (docs/architecture.md §7): the one module that touches litellm.

``complete(model, messages, params, api_base=…, api_key_env=…)`` makes exactly
one chat completion and returns a ``Completion``, or classifies the failure:
rate limits, timeouts, connection errors and 5xx raise ``TransientLLMError``
(the run's task retries it, under the one retry policy); everything else —
missing credentials, 400, 401, 403, 404, content policy, … — raises
``PermanentLLMError``. Error messages never carry the key.

Keys go only where they belong: the key is read from the variable the pinned
profile names (``api_key_env``) and passed explicitly; a profile with its own
``api_base`` and no key variable is sent ``NO_KEY``, a placeholder that local
OpenAI-compatible servers ignore (the OpenAI client refuses to send a request
without some key), so litellm never falls back to the provider's usual
variable (``OPENAI_API_KEY``) for another server.

Safety switch: under ``COUNCIL_OFFLINE=1`` (set by the test suite) only the
simulated provider and servers on localhost may be called; anything else is
refused before litellm is even loaded.

A profile on litellm's ``openai/`` provider with its own ``api_base`` is called with the
OpenAI SDK directly where litellm would send the same request (``council.agents.openai_direct``:
litellm's wrapper costs more CPU than the call), its errors classified and its answer
priced as litellm's are; ``COUNCIL_OPENAI_DIRECT=0`` sends every call through litellm.

litellm is imported lazily (it is slow to import) with its price map read
from the installed package, never fetched. The simulated provider
(``council.agents.simulated``) is registered as litellm's custom provider
``council-sim`` on first use, so simulated runs take the same code path.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from council.agents import openai_direct, sim_params, simulated
from council.agents.errors import PermanentLLMError, TransientLLMError, UnreachableLLMError
from council.agents.pricing import unpriced_reason
from council.known_secrets import redact
from council.settings import export, settings

DEFAULT_TIMEOUT_S = 300.0
NO_KEY = "council-no-key"  # sent to a profile's own api_base when it names no key variable
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_TRANSIENT_STATUS = frozenset({408, 409, 429})
# The OpenAI SDK (and litellm for other providers) reports a missing key as a 500 or a 401.
_MISSING_KEY = re.compile(
    r"missing credentials|missing [\w ]*api key|api_key client option must be set", re.I
)
_OWNED_PARAMS = frozenset({"api_key", "api_base", "base_url", "num_retries", "max_retries"})
_REASON_CHARS = 600
LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")

# The model of the call preload() makes, and the call parameter that spares it the latency.
WARM_UP_MODEL = simulated.MODEL_PREFIX + "warm-up"
_WARM_UP = "council_warm_up"
# What litellm's success logging imports on its first call, on a thread of its own that the
# warm-up call does not wait for.
_LITELLM_LOGGING_MODULES = ("litellm.proxy.spend_tracking.savings",)

_lock = threading.Lock()
_registered = False
_warmed = False  # preload() made its call
_priced: set[str] = set()  # simulated models entered in litellm's price map


@dataclass(frozen=True)
class ToolCall:
    """One tool call a model asked for: its call id, the tool's name and its JSON arguments
    as the model wrote them (data: the caller parses and checks them)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Completion:
    text: str
    usage: dict[str, int] | None  # prompt_tokens, completion_tokens, total_tokens
    cost_usd: float | None  # None when the call cannot be priced: ``unpriced`` says why
    model: str  # as the provider reported it
    simulated: bool
    tool_calls: tuple[ToolCall, ...] = ()
    unpriced: str | None = None


def complete(
    model: str,
    messages: Sequence[Mapping[str, object]],
    params: Mapping[str, object],
    *,
    api_base: str | None = None,
    api_key_env: str = "",
    tools: Sequence[Mapping[str, object]] | None = None,
) -> Completion:
    """One chat completion, one attempt. ``params`` go to litellm as they are
    (temperature, max_tokens, timeout, …); the endpoint is ``api_base`` and the
    key the value of the variable ``api_key_env`` names. ``tools`` (OpenAI function
    tools; litellm translates them for Anthropic and others) may be called: the calls
    come back in ``Completion.tool_calls``."""
    is_simulated = model.startswith(simulated.MODEL_PREFIX)
    owned = sorted(_OWNED_PARAMS & set(params))
    if owned:
        raise PermanentLLMError(f"{model}: {', '.join(owned)} may not be call parameters")
    _refuse_if_offline(model, api_base, is_simulated)
    call: dict[str, object] = dict(params)
    secret = ""
    if not is_simulated:
        if api_base:
            call["api_base"] = api_base
        if api_key_env:
            secret = settings().variable(api_key_env)
            if not secret:
                raise PermanentLLMError(f"{model}: {api_key_env} is not set in this process's environment")
            call["api_key"] = secret
        elif api_base:
            call["api_key"] = NO_KEY
    call.setdefault("timeout", DEFAULT_TIMEOUT_S)
    passed = {**params, "timeout": call["timeout"]}
    direct = not is_simulated and settings().openai_direct and openai_direct.takes(model, api_base, passed)
    if tools:
        call["tools"] = tools
    _prepare_litellm()
    import litellm

    try:
        if direct and api_base:  # the request litellm would send, without its wrapper (openai_direct)
            key = str(call.get("api_key") or NO_KEY)
            sent = openai_direct.create(model, messages, passed, api_base=api_base, api_key=key, tools=tools)
        else:
            # litellm's and the OpenAI SDK's own retries are off: the run's retry policy is the only one.
            response = litellm.completion(
                model=model, messages=messages, num_retries=0, max_retries=0, drop_params=True, **call
            )
    except Exception as exc:
        if is_simulated:
            # Anything the simulator raises is a defect of the simulation (litellm reports it as
            # a connection error): never retried.
            raise PermanentLLMError(
                f"{model}: the simulated provider failed: {_reason(exc, secret)}"
            ) from None
        unreachable = _unreachable(exc, api_base)
        if unreachable is not None:
            raise UnreachableLLMError(f"{model}: {unreachable}") from None
        if _is_transient(exc):
            raise TransientLLMError(f"{model}: {_reason(exc, secret)}") from None
        if _is_provider_error(exc):
            raise PermanentLLMError(f"{model}: {_reason(exc, secret)}") from None
        raise
    if direct:
        why = openai_direct.malformed(sent)
        if why is not None:  # litellm reports the same answer as a provider's HTTP 500: transient
            raise TransientLLMError(f"{model}: the provider's answer is malformed: {why}")
        answered = _completion(sent, model, False, priced=False)
        answered = replace(answered, cost_usd=openai_direct.price(model, answered.usage))
    else:
        answered = _completion(response, model, is_simulated)
    if answered.cost_usd is None:
        return replace(answered, unpriced=unpriced_reason(model, answered.usage))
    return answered


def _refuse_if_offline(model: str, api_base: str | None, is_simulated: bool) -> None:
    if not settings().offline or is_simulated:
        return
    if api_base and urlsplit(api_base).hostname in LOCAL_HOSTS:
        return
    raise PermanentLLMError(f"offline: refusing to call {model}")


def preload() -> None:
    """Import litellm, register the simulated provider and make one simulated call now,
    without its latency. A worker does it before it takes work (before forking its pool):
    litellm imports much of itself only on its first call (its tokenizer's encoding, its
    proxy's file-id and spend-logging helpers), and a new worker's first wave of runs
    would otherwise pay that together, in every pool process. Once a process: later
    calls return at once."""
    global _warmed
    _prepare_litellm()
    with _lock:
        if _warmed:
            return
        _warmed = True
    import importlib

    import litellm

    for name in _LITELLM_LOGGING_MODULES:
        importlib.import_module(name)

    litellm.completion(
        model=WARM_UP_MODEL,
        messages=[{"role": "user", "content": "warm-up"}],
        num_retries=0,
        max_retries=0,
        drop_params=True,
        timeout=DEFAULT_TIMEOUT_S,
        **{_WARM_UP: True},
    )


def _prepare_litellm() -> None:
    """Import litellm (price map from the package, not the network) and register
    the simulated provider, once."""
    global _registered
    export("LITELLM_LOCAL_MODEL_COST_MAP", "True", overwrite=False)
    with _lock:
        if _registered:
            return
        import litellm
        from litellm.llms.custom_llm import CustomLLM

        class SimulatedLLM(CustomLLM):
            """litellm's handle on the simulated provider; the behaviour is in ``simulated``."""

            def completion(self, *args: Any, **kwargs: Any) -> Any:
                model = simulated.MODEL_PREFIX + str(kwargs["model"]).removeprefix(simulated.MODEL_PREFIX)
                _price_as_free(model)
                optional = kwargs.get("optional_params") or {}
                conformity = sim_params.conformity_of(optional)
                reply = simulated.respond(
                    model,
                    kwargs["messages"],
                    conformity=conformity,
                    self_revision=sim_params.self_revision_of(optional),
                    tools_offered=bool(optional.get("tools")),
                )
                # Simulated latency, spent waiting (COUNCIL_SIM_LATENCY: "2" or "2±0.5" seconds).
                latency = sim_params.latency_s(sim_params.latency_spec(settings().environ), reply.text)
                warm_up = (kwargs.get("optional_params") or {}).get(_WARM_UP)
                if latency > 0 and not warm_up:  # even sleep(0) gives the processor away
                    time.sleep(latency)
                response = litellm.ModelResponse(
                    model=model,
                    system_fingerprint="council-simulated",
                    choices=[_simulated_choice(reply)],
                    usage=litellm.Usage(
                        prompt_tokens=reply.prompt_tokens,
                        completion_tokens=reply.completion_tokens,
                        total_tokens=reply.prompt_tokens + reply.completion_tokens,
                    ),
                )  # fmt: skip
                # The simulator is free, and says so: litellm then takes the stated cost instead of
                # searching its price map for a model it cannot know (a fifth of its CPU a call).
                # Set after construction: pydantic resets private attributes in __init__.
                response._hidden_params = {**response._hidden_params, "response_cost": 0.0}
                return response

            async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
                return await asyncio.to_thread(self.completion, *args, **kwargs)

        litellm.suppress_debug_info = True  # no "Give Feedback" banners on stdout
        if not settings().litellm_log:
            # litellm's loggers inherit the root level: under a worker at INFO each call
            # would log its own lines (on stderr, which the worker logs again as warnings).
            for name in LITELLM_LOGGERS:
                logging.getLogger(name).setLevel(logging.WARNING)
        litellm.custom_provider_map = [
            *[item for item in litellm.custom_provider_map if item["provider"] != simulated.PROVIDER],
            {"provider": simulated.PROVIDER, "custom_handler": SimulatedLLM()},
        ]
        _registered = True


def _simulated_choice(reply: simulated.SimulatedReply) -> dict[str, object]:
    """The simulated answer as a choice: its text, or its reads as read_evidence calls."""
    if not reply.reads:
        return {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply.text}}
    calls = [
        {"id": f"call_sim_{n}", "type": "function",
         "function": {"name": "read_evidence", "arguments": json.dumps({"id": evidence_id})}}
        for n, evidence_id in enumerate(reply.reads)
    ]  # fmt: skip
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    return {"index": 0, "finish_reason": "tool_calls", "message": message}


def _price_as_free(model: str) -> None:
    """Enter a simulated model in litellm's price map at zero, once: litellm prices every
    answer (and explains a zero cost), and for a model it does not know it searches its
    whole map for a resemblance first, each call."""
    if model in _priced:
        return
    import litellm

    with _lock:
        free = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0}
        free |= {"cache_creation_input_token_cost": 0.0, "cache_read_input_token_cost": 0.0}
        litellm.register_model({model: {**free, "litellm_provider": simulated.PROVIDER, "mode": "chat"}})
        _priced.add(model)


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _is_transient(exc: BaseException) -> bool:
    import openai
    from litellm import exceptions as e

    if _MISSING_KEY.search(str(exc)):
        return False
    if isinstance(
        exc,
        openai.APIConnectionError  # the SDK's own, timeouts among them (the direct path)
        | e.RateLimitError
        | e.Timeout
        | e.APIConnectionError
        | e.InternalServerError
        | e.ServiceUnavailableError
        | e.BadGatewayError,
    ):
        return True
    status = _status(exc)
    return _is_provider_error(exc) and status is not None and (status >= 500 or status in _TRANSIENT_STATUS)


def _is_provider_error(exc: BaseException) -> bool:
    import openai  # litellm's exceptions derive from the OpenAI SDK's

    return isinstance(exc, openai.OpenAIError)


def _unreachable(exc: BaseException, api_base: str | None) -> str | None:
    """Why nothing answered, naming the endpoint's host and port (never its path, query or
    credentials), when no connection could be made: refused, or the host did not resolve
    or could not be reached; None for any other failure (a timeout, a status, a malformed
    answer). litellm reports a refused connection as its InternalServerError, so the cause
    is read from the exception chain, where the SDK's error and the socket's own sit."""
    import socket

    request_url, cause = None, None
    found: BaseException | None = exc
    for _ in range(12):
        if found is None:
            break
        url = getattr(getattr(found, "request", None), "url", None)
        if url is not None and request_url is None and type(found).__module__.startswith("openai"):
            request_url = str(url)
        if cause is None and isinstance(found, ConnectionRefusedError):
            cause = "connection refused"
        elif cause is None and isinstance(found, socket.gaierror):
            cause = "its host name did not resolve"
        elif cause is None and type(found) in (OSError, ConnectionError):
            cause = f"no connection ({' '.join(str(found).split())[:120]})"
        found = found.__cause__ or found.__context__
    if cause is None:
        return None
    where = urlsplit(api_base or request_url or "")
    try:
        port = where.port or (443 if where.scheme == "https" else 80)
    except ValueError:
        port = None
    host = f"[{where.hostname}]" if ":" in (where.hostname or "") else where.hostname
    endpoint = f"{host}:{port}" if host and port else host or "the provider's endpoint"
    return f"cannot connect to {endpoint}: {cause}"


def _reason(exc: BaseException, secret: str) -> str:
    status = _status(exc)
    text = f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "") + f": {exc}"
    text = redact(text, [secret])  # the key, and every other known secret, in any encoding
    text = re.sub(r"(?i)(bearer\s+|x-api-key[\"']?\s*[:=]\s*[\"']?)[^\s\"',]+", r"\1***", text)
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 1] + "…"


def _completion(response: Any, model: str, is_simulated: bool, *, priced: bool = True) -> Completion:
    choice = response.choices[0] if response.choices else None
    text = (choice.message.content if choice is not None else None) or ""
    usage = getattr(response, "usage", None)
    counts = None
    if usage is not None:
        counts = {
            key: int(getattr(usage, key))
            for key in ("prompt_tokens", "completion_tokens", "total_tokens")
            if isinstance(getattr(usage, key, None), int)
        }
    return Completion(
        text=str(text),
        usage=counts or None,
        cost_usd=0.0 if is_simulated else _cost(response) if priced else None,
        model=str(getattr(response, "model", None) or model),
        simulated=is_simulated,
        tool_calls=_tool_calls(choice.message if choice is not None else None),
    )


def _tool_calls(message: Any) -> tuple[ToolCall, ...]:
    calls = getattr(message, "tool_calls", None) or []
    found = []
    for n, call in enumerate(calls):
        function = getattr(call, "function", None)
        found.append(
            ToolCall(
                id=str(getattr(call, "id", None) or f"call_{n}"),
                name=str(getattr(function, "name", None) or ""),
                arguments=str(getattr(function, "arguments", None) or ""),
            )
        )
    return tuple(found)


def _cost(response: Any) -> float | None:
    """The cost litellm priced the call at as it returned it, else priced now."""
    stated = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    if isinstance(stated, int | float):
        return float(stated)
    import litellm

    try:
        cost = litellm.completion_cost(completion_response=response)
    except Exception:  # unpriced or unknown model: cost is unknown, not an error
        return None
    return float(cost) if isinstance(cost, int | float) else None
