"""What each kind of event carries (docs/architecture.md §2, invariant 10): the keys its
payload always has and their JSON types.

One table, two enforcers: the database refuses an event whose payload does not fit its
kind, or whose kind is unknown (``event_shapes`` and ``council_event_shape_v1``,
migration 0041, seeded with this table; a test keeps the two equal), and every reader
of the log checks an event with :func:`problem` before it reads the payload, so an event
written before the check (or planted by the owner) is skipped and named, never a 500.
A new kind is a new row here and in a migration.

Types are JSON's as ``jsonb_typeof`` names them; ``"string|null"`` takes either. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

_RUN_END: Final = {"attempt": "number"}
_REASON: Final = {"reason": "string"}
_VALIDITY_MOVE: Final = {"from": "string", "reason": "string", "affected": "number"}
_MEMORY_MOVE: Final = {"from": "string", "reason": "string|null"}
_RETRACTION_CLOSED: Final = {"consolidation_id": "string"}
_RUN_BEGUN: Final = {"agent": "string", "model": "string", "provider": "string", "exposed_to": "array"}

SHAPES: Final[Mapping[str, Mapping[str, str]]] = {
    "action.added": {"node_version_id": "string|null"},
    "action.cancelled": _REASON,
    "action.satisfied": _REASON,
    "branch.abandoned": _REASON,
    "branch.forked": {"kind": "string", "parent_branch_id": "string"},
    "branch.killed": _REASON,
    "branch.merged": {"target_branch_id": "string", "merge_id": "string"},
    "claim.added": {
        "run_id": "string",
        "node_version_id": "string",
        "claim_type": "string",
        "confidence": "number",
        "citations": "number",
    },
    "consolidation.committed": {
        "node_version_id": "string",
        "snapshot_sha256": "string",
        "support_groups": "array",
        "memory_item_id": "string",
    },
    "consolidation.not_ready": {"evaluation_id": "string", "failed": "array"},
    "consolidation.superseded": {"by_version_id": "string", "memory_item_id": "string"},
    "dispatch.created": {"mode": "string", "rounds": "number", "agents": "array"},
    "evidence.added": {"sha256": "string", "new_content": "boolean"},
    "evidence.challenged": _VALIDITY_MOVE,
    "evidence.invalidated": _VALIDITY_MOVE,
    "evidence.reaffirmed": _VALIDITY_MOVE,
    "memory.contested": _MEMORY_MOVE,
    "memory.provisional": _MEMORY_MOVE,
    "memory.retracted": _MEMORY_MOVE,
    "memory.stable": _MEMORY_MOVE,
    "memory.superseded": _MEMORY_MOVE,
    "node.created": {"logical_node_id": "string", "branch_id": "string", "status": "string"},
    "node.resolved": {"resolution_id": "string", "outcome": "boolean", "source": "string"},
    "node.status_changed": {"from": "string", "to": "string", "reason": "string"},
    "node.versioned": {"logical_node_id": "string", "version_no": "number", "parent_version_id": "string"},
    "retraction.proposed": {"consolidation_id": "string", "reason": "string"},
    "retraction.restored": _RETRACTION_CLOSED,
    "retraction.retracted": _RETRACTION_CLOSED,
    "retraction.review_unfunded": {"reason": "string"},
    "retraction.review_unstaffed": {"reviewers": "object"},
    "retraction.superseded": _RETRACTION_CLOSED,
    "retraction.voted": {"proposal_id": "string", "run_id": "string", "vote": "string"},
    "rule_set.pinned": {},
    "rule_set.stored": {"sha256": "string"},
    "run.begun": _RUN_BEGUN,
    "run.failed": _RUN_END,
    "run.output_applied": {"claims": "number", "nodes": "number", "versions": "number"},
    "run.recorded": _RUN_BEGUN,
    "run.started": {"attempt": "number", "request_sha256": "string", "exposures": "number"},
    "run.succeeded": _RUN_END,
    "thread.budget_set": {"usd": "string|null"},
    "thread.created": {"title": "string", "rule_set_id": "string", "grouping_algorithm_id": "string"},
    "thread.imported": {"import_id": "string", "record_id": "string", "turns": "number"},
    "thread.question_asked": {"question": "string"},  # council ask --thread (main's revision 0039)
    "thread.review_set": {"review": "string"},
}


def json_type(value: object) -> str:
    """The JSON type of a decoded value, as ``jsonb_typeof`` names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def problem(kind: str, payload: object) -> str | None:
    """Why an event of ``kind`` with ``payload`` is malformed (None: it fits its kind)."""
    shape = SHAPES.get(kind)
    if shape is None:
        return f"no event kind {kind!r} is known"
    if not isinstance(payload, Mapping):
        return f"its payload is a JSON {json_type(payload)}, not an object"
    for key, wanted in shape.items():
        if key not in payload:
            return f"its payload has no {key!r}"
        found = json_type(payload[key])
        if found not in wanted.split("|"):
            return f"its payload's {key!r} is a JSON {found}, not a {wanted}"
    return None
