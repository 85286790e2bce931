"""Rule sets: stored bodies, the counterfactual report that motivated each one
(its provenance) and the rule set new threads are pinned to (migration 0012).
Named SQL in council/sql/rule_sets.sql on the unit's psycopg connection."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict
from uuid import UUID

from council.domain.counterfactual import RuleSet, check_alternatives
from council.domain.results.learning import RuleSetProvenance, RuleSetShown
from council.errors import BadInput, NotFound
from council.ledger.events import append
from council.ledger.pg import column, execute, fetch, fetch_one

if TYPE_CHECKING:  # events.append takes it until the events store runs named SQL
    from council.ledger.pg import Connection

DEFAULT_RULE_SET = "council-default-v1"
EXCLUSIVE_RULE_SET = "council-default-v3"  # exclusive alternatives (revision 0040)


class _ShownRow(TypedDict):
    id: str
    body: dict[str, Any]
    body_sha256: str
    description: str
    created_at: datetime
    report_sha256: str | None
    thread_id: UUID | None
    since: datetime | None
    compared: int | None
    changed: list[str] | None
    recorded_at: datetime | None


class RuleSets:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def get(self, rule_set_id: str) -> RuleSet:
        found = fetch_one(self._conn, "rule_set", RuleSet, id=rule_set_id)
        if found is None:
            raise NotFound(f"no rule set named {rule_set_id!r}")
        try:  # a stored body is refused as a file's would be
            check_alternatives(found.body)
        except BadInput as exc:
            raise BadInput(f"rule set {rule_set_id!r}: {exc}") from None
        return found

    def pinned(self) -> str:
        """The rule set a thread created now is pinned to."""
        latest = column(self._conn, "pinned_rule_set", str)
        return latest[0] if latest else DEFAULT_RULE_SET

    def exclusive(self) -> str:
        """The rule set a thread of rival alternatives is pinned to (a multiple-choice
        question, an imported record): the one pinned for new threads when it makes
        alternatives exclusive, else council-default-v3 (docs/architecture.md §4)."""
        pinned = self.pinned()
        return pinned if self.get(pinned).body.get("exclusive_alternatives") is True else EXCLUSIVE_RULE_SET

    def show(self, rule_set_id: str) -> RuleSetShown:
        found = self._shown(rule_set_id)
        if not found:
            raise NotFound(f"no rule set named {rule_set_id!r}")
        return found[0]

    def all(self) -> list[RuleSetShown]:
        return self._shown(None)

    def _shown(self, rule_set_id: str | None) -> list[RuleSetShown]:
        pinned = self.pinned()
        shown = []
        for row in fetch(self._conn, "rule_sets_shown", _ShownRow, id=rule_set_id):
            provenance = None
            if row["report_sha256"] is not None:
                provenance = RuleSetProvenance.model_validate(row)
            shown.append(
                RuleSetShown.model_validate(
                    {
                        "id": row["id"],
                        "body": row["body"],
                        "body_sha256": row["body_sha256"],
                        "description": row["description"],
                        "created_at": row["created_at"],
                        "provenance": provenance,
                        "pinned": row["id"] == pinned,
                    }
                )
            )
        return shown

    def add(self, rule_set: RuleSet, *, provenance: dict[str, Any] | None, actor: str) -> bool:
        """Store a rule set with its provenance; False when the same id and body are
        already stored (a shipped rule set is never edited: a change is a new id)."""
        existing = column(self._conn, "rule_set_sha256", str, id=rule_set.id)
        if existing:
            if existing[0] != rule_set.sha256:
                raise BadInput(
                    f"rule set {rule_set.id!r} is stored with another body; a change takes a new id"
                )
            return False
        execute(
            self._conn,
            "add_rule_set",
            id=rule_set.id,
            body=json.dumps(rule_set.body),
            body_sha256=rule_set.sha256,
            description=rule_set.description,
        )
        if provenance is not None:
            execute(
                self._conn,
                "add_rule_set_provenance",
                rule_set_id=rule_set.id,
                actor=actor,
                **{**provenance, "changed": json.dumps(provenance["changed"])},
            )
        append(
            self._conn,
            "rule_set.stored",
            actor=actor,
            subject_id=rule_set.id,
            payload={"sha256": rule_set.sha256, "report_sha256": (provenance or {}).get("report_sha256")},
        )
        return True

    def pin(self, rule_set_id: str, *, actor: str) -> None:
        """Pin new threads to a stored rule set (threads already open keep theirs)."""
        self.get(rule_set_id)
        execute(self._conn, "pin_rule_set", rule_set_id=rule_set_id, actor=actor)
        append(self._conn, "rule_set.pinned", actor=actor, subject_id=rule_set_id)
