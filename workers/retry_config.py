"""The one retry policy's settings (``council.domain.retry``), read from the
environment of the worker that retries; the domain reads none."""

from __future__ import annotations

import functools
import math
import os

from council.domain.retry import RetryPolicy
from council.errors import ConfigError

MAX_ENV = "COUNCIL_RETRY_MAX"  # retries after the first try
BASE_ENV = "COUNCIL_RETRY_BASE_S"  # the backoff's first ceiling, doubled at each retry
CAP_ENV = "COUNCIL_RETRY_CAP_S"  # the most any one wait may be
MAX_RETRIES = 100


@functools.cache
def retry_policy() -> RetryPolicy:
    """The policy under this process's environment; ConfigError names a bad variable."""
    default = RetryPolicy()
    retries = _number(MAX_ENV, default.max_retries)
    if retries != int(retries) or not 0 <= retries <= MAX_RETRIES:
        raise ConfigError(f"{MAX_ENV} must be a whole number from 0 to {MAX_RETRIES}")
    return RetryPolicy(
        max_retries=int(retries),
        base_s=_number(BASE_ENV, default.base_s),
        cap_s=_number(CAP_ENV, default.cap_s),
    )


def _number(variable: str, default: float) -> float:
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{variable} must be a number, got {raw!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{variable} must be a number of at least 0, got {raw!r}")
    return value
