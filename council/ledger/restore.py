"""An explicit restore through adjudication (docs/architecture.md §5): a retracted
version does not consolidate again on claims alone, but a person may undo the
retraction a proposal decided."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, insert, select

from council.domain import validate as v
from council.errors import BadInput
from council.ledger import events
from council.ledger import tables as t
from council.ledger.lookup import require
from council.ledger.memory import move_memory


def restore_retraction(
    conn: Connection, proposal: dict[str, Any], consolidation: dict[str, Any], *, reason: str, actor: str
) -> None:
    """Undo a retraction by explicit adjudication (call under the node's lock,
    from :meth:`locked_for_adjudication`): the proposal moves retracted →
    restored, its consolidation back to live, the memory to stable and the
    version to resolved. Refused while another consolidation of the node is
    live or a newer version exists (restore that one, or consolidate it)."""
    reason = v.text(reason, "reason", v.MAX_REASON)
    if proposal["status"] != "retracted":
        raise BadInput(
            f"proposal {proposal['id']} is {proposal['status']}; only a retracted one can be restored"
        )
    if consolidation["status"] != "retracted":
        raise BadInput(f"consolidation {consolidation['id']} is {consolidation['status']}, not retracted")
    live = conn.execute(
        select(t.consolidations.c.id).where(
            t.consolidations.c.logical_node_id == consolidation["logical_node_id"],
            t.consolidations.c.status == "live",
        )
    ).scalar()
    if live is not None:
        raise BadInput(f"consolidation {live} of the same node is live; a restore would make two")
    version = require(conn, t.node_versions, consolidation["node_version_id"], "node version")
    newer = conn.execute(
        select(t.node_versions.c.id).where(
            t.node_versions.c.logical_node_id == version["logical_node_id"],
            t.node_versions.c.version_no > version["version_no"],
        )
    ).first()
    if newer is not None:
        raise BadInput(f"node version {version['id']} has a newer version {newer.id}; consolidate that one")
    why = f"restored by adjudication: {reason}"
    details = {"restore": True, "reason": reason}
    conn.execute(
        insert(t.retraction_proposal_transitions).values(
            proposal_id=proposal["id"],
            from_status="retracted",
            to_status="restored",
            reason=why,
            actor=actor,
            details=details,
        )
    )
    conn.execute(
        insert(t.consolidation_transitions).values(
            consolidation_id=consolidation["id"],
            from_status="retracted",
            to_status="live",
            reason=why,
            actor=actor,
        )
    )
    memory = dict(
        conn.execute(select(t.memory_items).where(t.memory_items.c.consolidation_id == consolidation["id"]))
        .mappings()
        .one()
    )
    move_memory(conn, memory, "stable", why, actor, {"proposal_id": str(proposal["id"])})
    current = conn.execute(
        select(t.node_version_states.c.status).where(t.node_version_states.c.id == version["id"])
    ).scalar_one()
    if current in ("open", "tentative"):
        conn.execute(
            insert(t.node_status_transitions).values(
                node_version_id=version["id"],
                from_status=current,
                to_status="resolved",
                reason=why,
                actor=actor,
                consolidation_id=consolidation["id"],
            )
        )
    events.append(
        conn,
        "retraction.restored",
        actor=actor,
        thread_id=proposal["thread_id"],
        subject_id=proposal["id"],
        payload={"consolidation_id": str(consolidation["id"]), **details},
    )
