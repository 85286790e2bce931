"""The published JSON contracts in schema/: validation and regeneration.

``python -m tests.published --write`` regenerates the files derived from code
(the reentry packet schema); ``make schema`` runs it.
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
AGENT_OUTPUT = SCHEMA_DIR / "agent-output.schema.json"
GROUPS = {"thread", "evidence", "node", "branch", "run", "claim", "action", "memory", "db", "retraction"}


def reentry_schema() -> dict[str, Any]:
    from council.domain.reentry import ReentryPacket

    schema = ReentryPacket.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "reentry-packet.schema.json"
    return schema


def agent_output_schema() -> dict[str, Any]:
    from council.agents.contract import output_json_schema

    return output_json_schema()


def generated() -> dict[Path, str]:
    """Every published file derived from code, with its current content."""
    return {REENTRY: dump(reentry_schema()), AGENT_OUTPUT: dump(agent_output_schema())}


def dump(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def command_key(args: tuple[str, ...]) -> str:
    words = [a for a in args if not a.startswith("-")]
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
