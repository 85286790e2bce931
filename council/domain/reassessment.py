"""What becomes of a consolidation's memory when its evidence changes (docs/architecture.md §5).

Pure judges over one consolidation as the ledger loaded it (its status, stored
snapshot, memory item and the current validity of each evidence item the
snapshot names). Each returns its verdict and appends the memory moves it
decides, in order; the ledger writes them.

- :func:`reassess` — after a validity change: invalidated evidence is checked
  for materiality (material: contested; immaterial: stable again, or
  provisional while other support is challenged); challenged support makes
  stable memory provisional; sound support makes provisional memory stable.
- :func:`reverify` — lazily, for provisional memory whose support is
  challenged: decided as if every challenged or invalidated item had fallen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict
from uuid import UUID

from council.domain import materiality
from council.domain.snapshot import Snapshot


class Loaded(TypedDict):
    """A consolidation as a judge reads it (``reassess_load``): its status, stored snapshot,
    memory item, and the current validity of each evidence item the snapshot names."""

    id: UUID
    status: str
    node_version_id: UUID
    thread_id: UUID
    snapshot: Snapshot
    memory_item_id: UUID
    memory_status: str
    memory_thread_id: UUID
    validity: dict[str, str]


class Verdict(TypedDict):
    """What a judge decided for one consolidation (``proposal_id`` set by the ledger
    when a material change opens a retraction proposal)."""

    consolidation_id: UUID
    node_version_id: UUID
    memory_item_id: UUID
    material: bool | None
    proposal_id: UUID | None
    memory_status: str


# One memory move as the ledger's move statement takes it, its ``details`` written as
# JSON and never read back here ("from" is a keyword, hence this form).
Move = TypedDict(
    "Move",
    {
        "memory_item_id": str,
        "thread_id": str,
        "from": str,
        "to": str,
        "reason": str,
        "details": Mapping[str, object],
    },
)
Moves = list[Move]


def move(
    memory_item_id: UUID | str,
    thread_id: UUID | str,
    from_status: str,
    to: str,
    reason: str,
    details: Mapping[str, object],
) -> Move:
    """One memory move, as the ledger's move statement takes it."""
    return {
        "memory_item_id": str(memory_item_id),
        "thread_id": str(thread_id),
        "from": from_status,
        "to": to,
        "reason": reason,
        "details": details,
    }


def verdict(row: Loaded) -> Verdict:
    return {
        "consolidation_id": row["id"],
        "node_version_id": row["node_version_id"],
        "memory_item_id": row["memory_item_id"],
        "material": None,
        "proposal_id": None,
        "memory_status": row["memory_status"],
    }


def reassess(row: Loaded, cause: str, moves: Moves) -> Verdict:
    """One consolidation's verdict after a validity change; its moves appended in order."""
    result = verdict(row)
    status = row["memory_status"]

    def to(target: str, reason: str, details: Mapping[str, object]) -> None:
        nonlocal status
        moves.append(move(row["memory_item_id"], row["memory_thread_id"], status, target, reason, details))
        status = target

    if row["status"] != "live":
        return {**result, "memory_status": status}
    validity = row["validity"]
    invalidated = sorted(e for e, state in validity.items() if state == "invalidated")
    challenged = sorted(e for e, state in validity.items() if state == "challenged")
    if invalidated:
        material, after = materiality.check(row["snapshot"], invalidated)
        result["material"] = material
        details = {"removed": invalidated, "failed_without_them": [r.rule for r in after.failed()]}
        if material:
            to("contested", f"{cause}: material", details)
        else:
            if status == "stable":
                to("provisional", f"{cause}: checking materiality", details)
            target = "provisional" if challenged else "stable"
            to(target, f"{cause}: immaterial", {**details, "check": "immaterial"})
    elif challenged:
        if status == "stable":
            to("provisional", f"{cause}: support challenged", {"challenged": challenged})
    elif status == "provisional":
        to("stable", f"{cause}: support sound again", {})
    return {**result, "memory_status": status}


def reverify(row: Loaded, cause: str, moves: Moves) -> Verdict:
    """Provisional memory with challenged support, decided as if it had all fallen."""
    result = verdict(row)
    challenged = sorted(e for e, state in row["validity"].items() if state == "challenged")
    if row["status"] != "live" or row["memory_status"] != "provisional" or not challenged:
        return result  # moved on since it was picked (a concurrent reassessment), or nothing to check
    invalidated = sorted(e for e, state in row["validity"].items() if state == "invalidated")
    material, after = materiality.check(row["snapshot"], [*invalidated, *challenged])
    target = "contested" if material else "stable"
    details = {
        "removed": [*invalidated, *challenged],
        "challenged": challenged,
        "failed_without_them": [r.rule for r in after.failed()],
        "check": "material" if material else "immaterial",
    }
    moves.append(
        move(
            row["memory_item_id"],
            row["memory_thread_id"],
            "provisional",
            target,
            f"{cause}: {details['check']}",
            details,
        )
    )
    return {**result, "material": material, "memory_status": target}
