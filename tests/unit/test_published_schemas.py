"""The published JSON Schemas are valid and in step with the code."""

from __future__ import annotations

import json

from jsonschema import Draft202012Validator

from tests.published import AGENT_OUTPUT, CLI_OUTPUTS, DECISION_RECORD, REENTRY, command_key, generated


def test_generated_schemas_match_the_models() -> None:
    for path, content in generated().items():
        assert path.read_text() == content, f"{path.name} is stale: run `make schema`"


def test_published_schemas_are_valid_json_schema() -> None:
    for path in (CLI_OUTPUTS, REENTRY, AGENT_OUTPUT, DECISION_RECORD):
        Draft202012Validator.check_schema(json.loads(path.read_text()))


def test_every_command_of_the_contract_has_an_output_schema() -> None:
    from council.cli.main import app, register_commands

    register_commands()
    names: set[str] = set()
    for info in app.registered_commands:
        names.add(info.name or "")
    for group in app.registered_groups:
        for info in group.typer_instance.registered_commands:  # type: ignore[union-attr]
            names.add(f"{group.name} {info.name}")
    defined = set(json.loads(CLI_OUTPUTS.read_text())["$defs"])
    # Long-running processes print logs, not one document; `db psql` hands over to psql.
    assert names - defined == {"worker", "db psql"}
    assert command_key(("thread", "create", "--json")) == "thread create"
    assert command_key(("replay", "abc", "--json")) == "replay"
