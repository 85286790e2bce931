"""An explicit restore through adjudication (docs/architecture.md §5): a retracted
version does not consolidate again on claims alone, but a person may undo the
retraction a proposal decided. Named SQL in council/sql/restore.sql on the unit's
psycopg connection."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TypedDict
from uuid import UUID

from council.domain import validate as v
from council.errors import BadInput, NotFound
from council.ledger import events
from council.ledger.memory import MemoryState, move_memory
from council.ledger.pg import Connection, column, execute, fetch, fetch_one

if TYPE_CHECKING:
    from council.domain.results.retraction import Proposal
    from council.ledger.consolidations import ConsolidationRow


class _Version(TypedDict):
    id: UUID
    logical_node_id: UUID
    version_no: int


def restore_retraction(
    conn: Connection, proposal: Proposal, consolidation: ConsolidationRow, *, reason: str, actor: str
) -> None:
    """Undo a retraction by explicit adjudication (call under the node's lock,
    from :meth:`locked_for_adjudication`): the proposal moves retracted →
    restored, its consolidation back to live, the memory to stable and the
    version to resolved. Refused while another consolidation of the node is
    live or a newer version exists (restore that one, or consolidate it)."""
    reason = v.text(reason, "reason", v.MAX_REASON)
    if proposal.status != "retracted":
        raise BadInput(f"proposal {proposal.id} is {proposal.status}; only a retracted one can be restored")
    if consolidation["status"] != "retracted":
        raise BadInput(f"consolidation {consolidation['id']} is {consolidation['status']}, not retracted")
    live = column(conn, "restore_live_rival", UUID, logical_node_id=consolidation["logical_node_id"])
    if live:
        raise BadInput(f"consolidation {live[0]} of the same node is live; a restore would make two")
    rival = column(conn, "restore_live_alternative", UUID, logical_node_id=consolidation["logical_node_id"])
    if rival:
        raise BadInput(
            f"consolidation {rival[0]} of a rival alternative is live; "
            "at most one alternative of a set may be (retract it first)"
        )
    version = fetch_one(conn, "restore_version", _Version, id=consolidation["node_version_id"])
    if version is None:
        raise NotFound(f"no node version with id {consolidation['node_version_id']}")
    newer = column(
        conn,
        "restore_newer_version",
        UUID,
        logical_node_id=version["logical_node_id"],
        version_no=version["version_no"],
    )
    if newer:
        raise BadInput(f"node version {version['id']} has a newer version {newer[0]}; consolidate that one")
    why = f"restored by adjudication: {reason}"
    details = {"restore": True, "reason": reason}
    execute(
        conn,
        "restore_proposal",
        proposal_id=proposal.id,
        reason=why,
        actor=actor,
        details=json.dumps(details),
    )
    execute(conn, "restore_consolidation", consolidation_id=consolidation["id"], reason=why, actor=actor)
    [memory] = fetch(conn, "consolidation_memory_item", MemoryState, consolidation_id=consolidation["id"])
    move_memory(conn, memory, "stable", why, actor, {"proposal_id": str(proposal.id)})
    [current] = column(conn, "version_status", str, version_id=version["id"])
    if current in ("open", "tentative"):
        execute(
            conn,
            "restore_version_resolved",
            node_version_id=version["id"],
            from_status=current,
            reason=why,
            actor=actor,
            consolidation_id=consolidation["id"],
        )
    events.append(
        conn,
        "retraction.restored",
        actor=actor,
        thread_id=proposal.thread_id,
        subject_id=proposal.id,
        payload={"consolidation_id": str(consolidation["id"]), **details},
    )
