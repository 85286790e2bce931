"""What the demo thread says: a question, three evidence items, and a follow-up proposition.

The council answers the question in its own words, on the one evidence item the thread
then holds — the decisive one the demo later invalidates. The other two arrive with the
follow-up, which depends on the council's answer and waits on a pending action (a load
test), so it stays open while the council deliberates on it. Each demo's evidence carries
its own build stamp: evidence is content-addressed across threads, and an earlier demo's
invalidation must not reach this one.
"""

from __future__ import annotations

from dataclasses import dataclass

TITLE = "SQLite parity for the production adapter"
OBJECTIVE = (
    "Does SQLite parity establish query-semantics equivalence with PostgreSQL 16 for the adapter's queries?"
)


@dataclass(frozen=True)
class EvidenceItem:
    title: str
    body: str  # formatted with the demo's build stamp


DECISIVE = EvidenceItem(
    "Parity suite report",
    "CI build {stamp}: the adapter parity suite passes 412/412 query-semantics cases on "
    "SQLite 3.45 and PostgreSQL 16.",
)
CONTEXT = (
    EvidenceItem(
        "Concurrency load test",
        "Load test {stamp}: under 8 concurrent writers SQLite serialises on the WAL lock; "
        "PostgreSQL 16 sustains 2,300 commits/s with no lock wait above 50 ms.",
    ),
    EvidenceItem(
        "Incident 2291 postmortem",
        "Postmortem {stamp}: a production deadlock in March involved advisory locks, which "
        "SQLite does not model.",
    ),
)

FOLLOW_UP = "SQLite parity is sufficient to ship the production adapter without a PostgreSQL-only test tier."
FOLLOW_UP_READING = "concurrency and locking lie outside what the parity suite covers"
ACTION = "Run the 8-writer load test against the adapter on PostgreSQL 16"
ACCEPTANCE = "no lock wait above 50 ms at 8 concurrent writers"
INVALIDATION = (
    "the parity job ran SQLite on both sides: its PostgreSQL service was misconfigured (CI ticket 4471)"
)
