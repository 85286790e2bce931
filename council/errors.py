"""The project's exception tree.

Driver errors are translated into these once, at the ledger boundary
(``council.ledger.db.translate``, ``council.ledger.pg.translate_driver``); faces map
them to exit codes / HTTP statuses.
"""

from __future__ import annotations


class CouncilError(Exception):
    """Base class; exit code 1 unless a subclass says otherwise."""

    exit_code = 1


class BadInput(CouncilError):
    """The caller's input is wrong: nothing was written. Exit code 2."""

    exit_code = 2


class BudgetRefused(BadInput):
    """A budget (the dispatch's or its thread's) refuses the dispatch: nothing was written."""


class NotFound(BadInput):
    """An id that names no row of the expected kind."""


class Conflict(CouncilError):
    """The ledger refused the write because of its current state."""


class Duplicate(Conflict):
    """A unique constraint refused a second copy of a row."""


class ImmutableRow(CouncilError):
    """A database trigger refused an UPDATE or DELETE of an immutable row."""


class Transient(CouncilError):
    """Asking again later may succeed; retried by the one policy (council.domain.retry)."""


class Unreachable(Transient):
    """Nothing answered at an endpoint: the connection was refused or could not be made.
    Retried on the policy's short schedule (``RetryPolicy.delay(..., unreachable=True)``):
    a server that refuses connections is down, not busy."""


class TransientDatabaseError(Transient):
    """Serialization failure, deadlock, lock or statement timeout, or a lost or refused
    connection. A write whose COMMIT was cut off may have landed: what retries it (the
    workers' tasks) is idempotent or fenced, so asking again is safe."""


class FetchError(CouncilError):
    """A URL could not be fetched (deadline, network, status, size): exit 1, HTTP 502."""


class UnreadableFetch(FetchError, BadInput):
    """A URL answered with a body that is not text Council reads (an unknown charset or
    content coding): exit 2, HTTP 422."""


class StackError(CouncilError):
    """The embedded stack could not be started, found or stopped."""


class ConfigError(CouncilError):
    """Configuration is missing or malformed."""

    exit_code = 2
