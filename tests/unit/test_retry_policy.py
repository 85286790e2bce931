"""The one retry policy: bounded, jittered, exponential, capped."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from council.agents.errors import PermanentLLMError, TransientLLMError, UnreachableLLMError
from council.domain.retry import RetryPolicy, is_transient
from council.errors import BadInput, TransientDatabaseError


def test_delays_grow_to_the_cap_and_stop_after_max_retries() -> None:
    policy = RetryPolicy(max_retries=4, base_s=2.0, cap_s=5.0)
    ceilings = [policy.delay(n, 0.999999) for n in range(5)]
    assert [round(c, 3) if c is not None else None for c in ceilings] == [2.0, 4.0, 5.0, 5.0, None]


@given(st.integers(min_value=0, max_value=50), st.floats(min_value=0, max_value=0.999999))
def test_a_delay_is_never_negative_nor_above_the_cap(retries: int, draw: float) -> None:
    policy = RetryPolicy(max_retries=60, base_s=1.0, cap_s=30.0)
    delay = policy.delay(retries, draw)
    assert delay is not None and 0.0 <= delay <= 30.0


def test_an_unreachable_endpoint_is_retried_as_often_on_the_short_schedule() -> None:
    policy = RetryPolicy(max_retries=4, base_s=2.0, cap_s=30.0, unreachable_base_s=0.1, unreachable_cap_s=1.0)
    ceilings = [policy.delay(n, 0.999999, unreachable=True) for n in range(5)]
    assert [round(c, 3) if c is not None else None for c in ceilings] == [0.1, 0.2, 0.4, 0.8, None]
    assert RetryPolicy().delay(3, 0.999999, unreachable=True) == pytest.approx(0.8, abs=1e-5)


def test_only_transient_errors_are_retried() -> None:
    assert is_transient(TransientLLMError("429"))
    assert is_transient(TransientDatabaseError("connection refused"))
    assert is_transient(UnreachableLLMError("cannot connect to 127.0.0.1:9: connection refused"))
    assert not is_transient(PermanentLLMError("401"))
    assert not is_transient(BadInput("unknown id"))
    assert not is_transient(ValueError("bug"))
