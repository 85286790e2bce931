"""Rule sets: stored bodies, the counterfactual report that motivated each one
(its provenance) and the rule set new threads are pinned to (migration 0012)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, insert, select

from council.domain.counterfactual import RuleSet
from council.domain.results.learning import RuleSetProvenance, RuleSetShown
from council.errors import BadInput, NotFound
from council.ledger import tables as t
from council.ledger.events import append

DEFAULT_RULE_SET = "council-default-v1"


class RuleSets:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def get(self, rule_set_id: str) -> RuleSet:
        row = (
            self._conn.execute(select(t.rule_sets).where(t.rule_sets.c.id == rule_set_id)).mappings().first()
        )
        if row is None:
            raise NotFound(f"no rule set named {rule_set_id!r}")
        return RuleSet(row["id"], dict(row["body"]), row["description"])

    def pinned(self) -> str:
        """The rule set a thread created now is pinned to."""
        latest = self._conn.execute(
            select(t.rule_set_pins.c.rule_set_id).order_by(t.rule_set_pins.c.id.desc()).limit(1)
        ).scalar_one_or_none()
        return str(latest) if latest is not None else DEFAULT_RULE_SET

    def show(self, rule_set_id: str) -> RuleSetShown:
        found = self._shown(t.rule_sets.c.id == rule_set_id)
        if not found:
            raise NotFound(f"no rule set named {rule_set_id!r}")
        return found[0]

    def all(self) -> list[RuleSetShown]:
        return self._shown(None)

    def _shown(self, where: Any) -> list[RuleSetShown]:
        query = (
            select(t.rule_sets, t.rule_set_provenance)
            .outerjoin(t.rule_set_provenance, t.rule_set_provenance.c.rule_set_id == t.rule_sets.c.id)
            .order_by(t.rule_sets.c.created_at, t.rule_sets.c.id)
        )
        if where is not None:
            query = query.where(where)
        pinned = self.pinned()
        shown = []
        for row in self._conn.execute(query).mappings():
            provenance = None
            if row["report_sha256"] is not None:
                provenance = RuleSetProvenance.model_validate(
                    {**row, "recorded_at": row[t.rule_set_provenance.c.created_at]}
                )
            shown.append(
                RuleSetShown.model_validate(
                    {
                        "id": row[t.rule_sets.c.id],
                        "body": row["body"],
                        "body_sha256": row["body_sha256"],
                        "description": row["description"],
                        "created_at": row[t.rule_sets.c.created_at],
                        "provenance": provenance,
                        "pinned": row[t.rule_sets.c.id] == pinned,
                    }
                )
            )
        return shown

    def add(self, rule_set: RuleSet, *, provenance: dict[str, Any] | None, actor: str) -> bool:
        """Store a rule set with its provenance; False when the same id and body are
        already stored (a shipped rule set is never edited: a change is a new id)."""
        existing = self._conn.execute(
            select(t.rule_sets.c.body_sha256).where(t.rule_sets.c.id == rule_set.id)
        ).scalar_one_or_none()
        if existing is not None:
            if existing != rule_set.sha256:
                raise BadInput(
                    f"rule set {rule_set.id!r} is stored with another body; a change takes a new id"
                )
            return False
        self._conn.execute(
            insert(t.rule_sets).values(
                id=rule_set.id,
                body=rule_set.body,
                body_sha256=rule_set.sha256,
                description=rule_set.description,
            )
        )
        if provenance is not None:
            self._conn.execute(
                insert(t.rule_set_provenance).values(rule_set_id=rule_set.id, actor=actor, **provenance)
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
        self._conn.execute(insert(t.rule_set_pins).values(rule_set_id=rule_set_id, actor=actor))
        append(self._conn, "rule_set.pinned", actor=actor, subject_id=rule_set_id)
