"""The LLM gateway (DESIGN §7): the one module that touches litellm.

``complete(model, messages, params)`` makes one chat completion and returns a
``Completion``. Retry policy lives here and nowhere else: rate limits,
timeouts, connection errors and 5xx are retried with jittered exponential
backoff, at most ``MAX_ATTEMPTS`` times, then raise ``TransientLLMError``;
everything else the provider says (401, 400, 404, content policy, …) raises
``PermanentLLMError`` at once. Error messages never carry the key.

Safety switch: under ``COUNCIL_OFFLINE=1`` (set by the test suite) only the
simulated provider and servers on localhost may be called; anything else is
refused before litellm is even loaded.

litellm is imported lazily (it is slow to import) with its price map read
from the installed package, never fetched. The simulated provider
(``council.agents.simulated``) is registered as litellm's custom provider
``council-sim`` on first use, so simulated runs take the same code path.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import tenacity

from council import metrics
from council.agents import simulated
from council.agents.errors import PermanentLLMError, TransientLLMError

MAX_ATTEMPTS = 4
RETRY_WAIT_ENV = "COUNCIL_LLM_RETRY_WAIT_S"  # the backoff's base wait in seconds (default 1)
DEFAULT_RETRY_WAIT_S = 1.0
DEFAULT_TIMEOUT_S = 300.0
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_TRANSIENT_STATUS = frozenset({408, 409, 429})
_REASON_CHARS = 600
LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")

_lock = threading.Lock()
_registered = False


@dataclass(frozen=True)
class Completion:
    text: str
    usage: dict[str, int] | None  # prompt_tokens, completion_tokens, total_tokens
    cost_usd: float | None  # None when litellm cannot price the model
    model: str  # as the provider reported it
    simulated: bool


def complete(
    model: str, messages: list[dict[str, Any]], params: dict[str, Any], *, api_key_env: str | None = None
) -> Completion:
    """One chat completion. ``params`` go to litellm as they are (temperature,
    max_tokens, api_base, api_key, timeout, …); ``api_key_env`` names a variable
    to read the key from when ``params`` has none (litellm reads the provider's
    usual variable otherwise)."""
    is_simulated = model.startswith(simulated.MODEL_PREFIX)
    call = dict(params)
    _refuse_if_offline(model, call, is_simulated)
    if api_key_env and "api_key" not in call and not is_simulated and os.environ.get(api_key_env):
        call["api_key"] = os.environ[api_key_env]
    secret = str(call.get("api_key") or "")
    call.setdefault("timeout", DEFAULT_TIMEOUT_S)
    _prepare_litellm()
    import litellm

    def attempt() -> Any:
        # litellm's and the OpenAI SDK's own retries are off: the policy is ours alone.
        return litellm.completion(
            model=model, messages=messages, num_retries=0, max_retries=0, drop_params=True, **call
        )

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(MAX_ATTEMPTS),
        wait=tenacity.wait_random_exponential(multiplier=_retry_wait(), max=_retry_wait() * 30),
        # The simulated provider has no transient failures: anything it raises is a
        # defect of the simulation (litellm reports it as a connection error), never retried.
        retry=tenacity.retry_if_exception(lambda exc: not is_simulated and _is_transient(exc)),
        before_sleep=lambda _state: metrics.count_retry("llm_transient"),
        reraise=True,
    )
    try:
        response = retrying(attempt)
    except Exception as exc:
        if is_simulated:
            raise PermanentLLMError(
                f"{model}: the simulated provider failed: {_reason(exc, secret)}"
            ) from None
        if _is_transient(exc):
            reason = _reason(exc, secret)
            raise TransientLLMError(f"{model}: no answer after {MAX_ATTEMPTS} attempts: {reason}") from None
        if _is_provider_error(exc):
            raise PermanentLLMError(f"{model}: {_reason(exc, secret)}") from None
        raise
    return _completion(response, model, is_simulated)


def _refuse_if_offline(model: str, call: dict[str, Any], is_simulated: bool) -> None:
    if os.environ.get("COUNCIL_OFFLINE") != "1" or is_simulated:
        return
    base = call.get("api_base") or call.get("base_url")
    if base and urlsplit(str(base)).hostname in LOCAL_HOSTS:
        return
    raise PermanentLLMError(f"offline: refusing to call {model}")


def _retry_wait() -> float:
    try:
        return max(0.0, float(os.environ.get(RETRY_WAIT_ENV, DEFAULT_RETRY_WAIT_S)))
    except ValueError:
        return DEFAULT_RETRY_WAIT_S


def preload() -> None:
    """Import litellm and register the simulated provider now (a worker does it
    before forking its pool, so no pool process pays the seconds of import)."""
    _prepare_litellm()


def _prepare_litellm() -> None:
    """Import litellm (price map from the package, not the network) and register
    the simulated provider, once."""
    global _registered
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with _lock:
        if _registered:
            return
        import litellm
        from litellm.llms.custom_llm import CustomLLM

        class SimulatedLLM(CustomLLM):
            """litellm's handle on the simulated provider; the behaviour is in ``simulated``."""

            def completion(self, *args: Any, **kwargs: Any) -> Any:
                model = simulated.MODEL_PREFIX + str(kwargs["model"]).removeprefix(simulated.MODEL_PREFIX)
                reply = simulated.respond(model, kwargs["messages"])
                # Simulated latency (tests and demos that need runs to take time).
                latency = float(os.environ.get("COUNCIL_SIM_LATENCY_S", "0") or 0)
                if latency > 0:  # even sleep(0) gives the processor away
                    time.sleep(latency)
                return litellm.ModelResponse(
                    model=model,
                    system_fingerprint="council-simulated",
                    choices=[{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": reply.text}}],
                    usage=litellm.Usage(
                        prompt_tokens=reply.prompt_tokens,
                        completion_tokens=reply.completion_tokens,
                        total_tokens=reply.prompt_tokens + reply.completion_tokens,
                    ),
                )  # fmt: skip

            async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
                return await asyncio.to_thread(self.completion, *args, **kwargs)

        litellm.suppress_debug_info = True  # no "Give Feedback" banners on stdout
        if not os.environ.get("LITELLM_LOG"):
            # litellm's loggers inherit the root level: under a worker at INFO each call
            # would log its own lines (on stderr, which the worker logs again as warnings).
            for name in LITELLM_LOGGERS:
                logging.getLogger(name).setLevel(logging.WARNING)
        litellm.custom_provider_map = [
            *[item for item in litellm.custom_provider_map if item["provider"] != simulated.PROVIDER],
            {"provider": simulated.PROVIDER, "custom_handler": SimulatedLLM()},
        ]
        _registered = True


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _is_transient(exc: BaseException) -> bool:
    from litellm import exceptions as e

    if isinstance(
        exc,
        e.RateLimitError
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


def _reason(exc: BaseException, secret: str) -> str:
    status = _status(exc)
    text = f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "") + f": {exc}"
    if secret:
        text = text.replace(secret, "***")
    text = re.sub(r"(?i)(bearer\s+|x-api-key[\"']?\s*[:=]\s*[\"']?)[^\s\"',]+", r"\1***", text)
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 1] + "…"


def _completion(response: Any, model: str, is_simulated: bool) -> Completion:
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
        cost_usd=0.0 if is_simulated else _cost(response),
        model=str(getattr(response, "model", None) or model),
        simulated=is_simulated,
    )


def _cost(response: Any) -> float | None:
    import litellm

    try:
        cost = litellm.completion_cost(completion_response=response)
    except Exception:  # unpriced or unknown model: cost is unknown, not an error
        return None
    return float(cost) if isinstance(cost, int | float) else None
