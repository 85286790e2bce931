"""One definition per result shape: the CLI's --json, the HTTP API's responses
and schema/cli-outputs.schema.json are the same typed results."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest

from council.web import routes_ledger, routes_threads, routes_writes
from tests.published import CLI_OUTPUTS, typed_commands

# What the API serves, and the command that prints the same thing.
SAME = {
    ("GET", "/threads"): "thread list",
    ("GET", "/threads/{thread_id}"): "thread show",
    ("GET", "/threads/{thread_id}/events"): "events",
    ("GET", "/threads/{thread_id}/stances"): "stances",
    ("GET", "/threads/{thread_id}/reentry"): "reentry",
    ("GET", "/runs/{run_id}"): "run show",
    ("GET", "/evidence/{evidence_id}"): "evidence show",
    ("GET", "/nodes/{version_id}"): "node show",
    ("GET", "/nodes/{version_id}/groups"): "groups",
    ("GET", "/nodes/{version_id}/history"): "history",
    ("GET", "/consolidations/{consolidation_id}/replay"): "replay",
    ("GET", "/memory"): "memory list",
    ("POST", "/threads/{thread_id}/dispatch"): "dispatch",
    ("POST", "/evidence/{evidence_id}/{action}"): "evidence invalidate",
    ("POST", "/consolidations/{consolidation_id}/retraction"): "retraction propose",
}


def _routes() -> dict[tuple[str, str], Any]:
    found = {}
    for module in (routes_threads, routes_ledger, routes_writes):
        for route in module.router.routes:
            for method in route.methods:  # type: ignore[attr-defined]
                found[(method, route.path)] = route.response_model  # type: ignore[attr-defined]
    return found


@pytest.mark.parametrize(("route", "command"), sorted(SAME.items()))
def test_the_api_and_the_cli_answer_with_the_same_type(route: tuple[str, str], command: str) -> None:
    served = _routes()[route]
    printed = typed_commands()[command]
    # A command that prints one of several shapes (``council replay``: one decision, or a
    # counterfactual report) declares their union; the route serves one of its members.
    members = (
        typing.get_args(printed.model_fields["root"].annotation) if "root" in printed.model_fields else ()
    )
    assert served is printed or served in members, (
        f"{route} serves {served}, `council {command}` prints another"
    )


def test_the_published_schema_names_each_command_s_type() -> None:
    published = json.loads(CLI_OUTPUTS.read_text())["$defs"]
    for command, result in typed_commands().items():
        assert published[command] == {"$ref": f"#/$defs/{result.__name__}"}, command
        assert published[result.__name__]["title"] == result.__name__


def test_every_route_with_a_document_answers_with_a_result_type() -> None:
    from council.domain.reentry import ReentryPacket
    from council.domain.results.base import Result

    for route, model in _routes().items():
        if model is not None:
            assert issubclass(model, Result | ReentryPacket), (
                f"{route} answers with {model}, not a result type"
            )
