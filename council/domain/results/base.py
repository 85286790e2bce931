"""The base of every result value."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

# A JSON object a result carries as it was stored or computed (a request, a trace, a
# rule set's body, a report's table): printed and sent whole, never read key by key in
# Python. Its published schema is "an object", as for any dict field.
Document = dict[str, object]


class Result(BaseModel):
    """A typed, immutable result. Unknown keys are refused, so a shape cannot
    grow a field that its published schema does not name."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    def json_document(self) -> dict[str, Any]:
        """The plain JSON value the faces print or send."""
        return self.model_dump(mode="json")


class Row(Result):
    """A result made from a ledger row: extra columns of the row are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)
