"""The published JSON contracts in schema/: validation and regeneration.

``python -m tests.published --write`` regenerates the files derived from code
(the reentry packet, decision record, agent output and CLI output schemas); ``make schema`` runs it.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schema"
CLI_OUTPUTS = SCHEMA_DIR / "cli-outputs.schema.json"
REENTRY = SCHEMA_DIR / "reentry-packet.schema.json"
DECISION_RECORD = SCHEMA_DIR / "decision-record.schema.json"
AGENT_OUTPUT = SCHEMA_DIR / "agent-output.schema.json"
GROUPS = {
    "thread",
    "evidence",
    "node",
    "branch",
    "run",
    "claim",
    "action",
    "memory",
    "db",
    "retraction",
    "rule-set",
    "proposal",
    "consolidation",
}
# Commands that act themselves and also hold sub-commands (`dispatch --thread T` and
# `dispatch list`): the key is the sub-command's only when the second word names one.
ACTING_GROUPS = {"dispatch": {"list", "show"}}


def reentry_schema() -> dict[str, Any]:
    from council.domain.reentry import ReentryPacket

    schema = ReentryPacket.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "reentry-packet.schema.json"
    return schema


def decision_record_schema() -> dict[str, Any]:
    from council.domain.results.export import DecisionRecord

    schema = DecisionRecord.model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "decision-record.schema.json"
    return schema


def agent_output_schema() -> dict[str, Any]:
    from council.domain.agent_output import output_json_schema

    return output_json_schema()


def typed_commands() -> dict[str, type[Any]]:
    """Each CLI command that declares its result type (``@returns``), by command key."""
    from council.cli.main import app, register_commands
    from council.cli.output import declared_result

    register_commands()
    import typer.main

    found: dict[str, type[Any]] = {}

    def walk(command: Any, words: tuple[str, ...]) -> None:
        if hasattr(command, "commands"):
            acting = declared_result(command.callback) if command.callback is not None else None
            if acting is not None:  # a group that acts itself too (`dispatch --thread T`)
                found[" ".join(words)] = acting
            for name, sub in command.commands.items():
                walk(sub, (*words, name))
            return
        result = declared_result(command.callback)
        if result is not None:
            found[" ".join(words)] = result

    walk(typer.main.get_command(app), ())
    return dict(sorted(found.items()))


def cli_outputs_schema() -> dict[str, Any]:
    """schema/cli-outputs.schema.json: generated from the result types the commands
    declare (each command's entry refers to its type's definition)."""
    from pydantic.json_schema import models_json_schema

    commands = typed_commands()
    models = sorted(set(commands.values()), key=lambda m: m.__name__)
    refs, schema = models_json_schema(
        [(model, "serialization") for model in models], ref_template="#/$defs/{model}"
    )
    definitions: dict[str, Any] = dict(schema.get("$defs", {}))
    for key, model in commands.items():
        definitions[key] = refs[(model, "serialization")]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "cli-outputs.schema.json",
        "title": "council --json outputs",
        "description": (
            "The one JSON document each `council COMMAND --json` prints on success, by command "
            "(the entries named by a command; the others are the result types they refer to). "
            "Generated from the commands' result types by `make schema`; every --json output in "
            "the test suite is validated against it."
        ),
        "$defs": dict(sorted(definitions.items())),
    }


def generated() -> dict[Path, str]:
    """Every published file derived from code, with its current content."""
    return {
        REENTRY: dump(reentry_schema()),
        DECISION_RECORD: dump(decision_record_schema()),
        AGENT_OUTPUT: dump(agent_output_schema()),
        CLI_OUTPUTS: dump(cli_outputs_schema()),
    }


def dump(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def command_key(args: tuple[str, ...]) -> str:
    words = [a for a in args if not a.startswith("-")]
    if words and len(words) > 1 and words[1] in ACTING_GROUPS.get(words[0], ()):
        return " ".join(words[:2])
    return " ".join(words[:2]) if words and words[0] in GROUPS else words[0]


@functools.cache
def _validators() -> dict[str, Draft202012Validator]:
    outputs = json.loads(CLI_OUTPUTS.read_text())
    registry: Registry = Registry().with_resources(
        [
            (CLI_OUTPUTS.name, Resource.from_contents(outputs)),
            (REENTRY.name, Resource.from_contents(json.loads(REENTRY.read_text()))),
        ]
    )
    return {
        name: Draft202012Validator({**schema, "$defs": outputs["$defs"]}, registry=registry)
        for name, schema in outputs["$defs"].items()
    }


def validate_cli_output(args: tuple[str, ...], document: Any) -> None:
    """Fail unless ``document`` matches the published schema of its command."""
    key = command_key(args)
    validator = _validators().get(key)
    if validator is None:
        raise AssertionError(f"`council {key} --json` has no schema in {CLI_OUTPUTS.name}")
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.path) or "(root)"
        raise AssertionError(f"`council {key} --json` breaks its schema at {where}: {first.message}")


def main(argv: list[str]) -> int:
    for path, content in generated().items():
        if "--write" in argv:
            path.write_text(content)
            print(f"wrote {path}")
        else:
            sys.stdout.write(content)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
