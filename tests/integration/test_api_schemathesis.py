"""Every operation of the OpenAPI document, fuzzed by schemathesis: never a 5xx.

Valid (positive) and invalid (negative) requests alike, with the write token,
so the writes' bodies are exercised rather than refused at the door.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
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


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
def test_no_operation_answers_with_a_server_error(
    engine: Engine, uow: UnitOfWork, db_url: str, mode: GenerationMode
) -> None:
    # Given the API over a thread with a consolidation (list reads return real rows)
    ledger = Ledger.new(engine)
    consolidate(uow, ledger.ready_node(), actor=ACTOR)
    # schemathesis calls the app as http://testserver
    policy = Policy(write_token=TOKEN, allowed_hosts=allowed_hosts(["testserver"]))
    schema = schemathesis.openapi.from_asgi(
        "/openapi.json", create_app(bootstrap(db_url, scheduler=lambda uow: Recorder()), policy=policy)
    )
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
            case.call_and_validate(headers={"Authorization": f"Bearer {TOKEN}"}, checks=[not_a_server_error])

        call()


def _takes_input(operation: schemathesis.APIOperation) -> bool:
    return bool(list(operation.iter_parameters()) or operation.get_request_payload_content_types())
