"""JSON as a type: what ``json.loads`` returns and ``canonical_json`` accepts.

``JsonValue`` is recursive, so a value typed with it is checked all the way
down; ``JsonObject`` is the common case of an object. A reader that only
looks at a mapping takes ``Mapping[str, object]`` instead (dicts are invariant,
so a ``dict[str, str]`` is not a ``JsonObject``).
"""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = "str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"
