"""Every operation of the OpenAPI document, fuzzed by schemathesis: never a 5xx.

Valid (positive) and invalid (negative) requests alike, with the write token, so the
writes' bodies are exercised rather than refused at the door; every generated JSON body
may also carry ``NaN``, ``Infinity`` or ``-Infinity`` in place of one of its values (what
Python's JSON parser reads and no column or answer can hold: issue 44). Then the
stateful phase: sequences of calls chained by the links schemathesis infers (an id one
answer returns is the next call's path parameter), under the same checks.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate
from council.web.app import create_app
from council.web.security import Policy, allowed_hosts
from tests.builders import ACTOR, Ledger

TOKEN = "schemathesis-token"
# Examples per operation; a deeper run: COUNCIL_SCHEMATHESIS_EXAMPLES=200 pytest this file.
EXAMPLES = int(os.environ.get("COUNCIL_SCHEMATHESIS_EXAMPLES", "8"))
NON_FINITE = (math.nan, math.inf, -math.inf)
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))
    else:
        yield path, value


def _replaced(value: Any, path: tuple[Any, ...], new: float) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replaced(copy[head], rest, new)
    return copy


def _with_non_finite(body: Any) -> st.SearchStrategy[Any]:
    """The body as generated, or with one value (a number, when it has any) made NaN or ±Infinity."""
    leaves = list(_leaves(body))
    numbers = [p for p, v in leaves if isinstance(v, int | float) and not isinstance(v, bool)]
    paths = numbers or [p for p, _ in leaves]
    if not paths:
        return st.just(body)
    # sent as the bytes Python's json writes (NaN, Infinity): a client's own encoder refuses them
    changed = st.tuples(st.sampled_from(paths), st.sampled_from(NON_FINITE)).map(
        lambda chosen: json.dumps(_replaced(body, *chosen)).encode()
    )
    return st.one_of(st.just(body), changed)


@pytest.fixture
def schema(engine: Engine, uow: UnitOfWork, db_url: str) -> Any:
    # Given the API over a thread with a consolidation (list reads return real rows)
    ledger = Ledger.new(engine)
    consolidate(uow, ledger.ready_node(), actor=ACTOR)
    # schemathesis calls the app as http://testserver
    policy = Policy(write_token=TOKEN, allowed_hosts=allowed_hosts(["testserver"]))
    loaded = schemathesis.openapi.from_asgi(
        "/openapi.json", create_app(bootstrap(db_url, scheduler=lambda uow: Recorder()), policy=policy)
    )
    loaded.hook("flatmap_body")(lambda _context, body: _with_non_finite(body))
    return loaded


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
def test_no_operation_answers_with_a_server_error(schema: Any, mode: GenerationMode) -> None:
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20
    if mode is GenerationMode.NEGATIVE:  # only what takes input can be sent invalid input
        operations = [op for op in operations if _takes_input(op)]
    # When every operation is called with generated requests
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        def call(case: schemathesis.Case) -> None:
            # Then none answers with a server error
            case.call_and_validate(headers=AUTH, checks=[not_a_server_error])

        call()


def test_no_sequence_of_linked_calls_answers_with_a_server_error(schema: Any) -> None:
    # Given the links schemathesis infers between the operations (ids answered, then used)
    machine = schema.as_state_machine()

    class Calls(machine):  # type: ignore[misc, valid-type]
        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {"headers": AUTH}

        def validate_response(self, response: Any, case: schemathesis.Case, **kwargs: Any) -> None:
            # Then no call of any sequence answers with a server error
            case.validate_response(response, checks=[not_a_server_error], transport_kwargs=kwargs)

    # When sequences of calls run
    Calls.run(
        settings=settings(
            max_examples=EXAMPLES * 4,
            stateful_step_count=6,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
    )


def _takes_input(operation: schemathesis.APIOperation) -> bool:
    return bool(list(operation.iter_parameters()) or operation.get_request_payload_content_types())
