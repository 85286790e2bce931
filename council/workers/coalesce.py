"""The workers' side of coalescing (``council.adapters.coalesce``): a task clears
the marks of the ids in its arguments when it starts, and sets them again,
for a bounded time, while a retry of it waits."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from celery import signals

from council.adapters import task_names
from council.adapters.coalesce import (
    CASCADE,
    EVALUATION,
    REVERIFICATION,
    RUN,
    Marks,
    marks_for,
    retry_mark_ttl_s,
)


def _first(args: Sequence[Any]) -> list[str]:
    return [str(args[0])] if args else []


def _listed(args: Sequence[Any]) -> list[str]:
    return [str(i) for i in args[0]] if args and args[0] is not None else []


# The marks each task clears when it starts and sets again when it retries: the ids in its arguments.
_TASK_MARKS: dict[str, tuple[str, Callable[[Sequence[Any]], list[str]]]] = {
    task_names.EXECUTE_RUN: (RUN, _first),
    task_names.EVALUATE_NODES: (EVALUATION, _listed),
    task_names.CASCADE: (CASCADE, _listed),
    task_names.REVERIFY: (REVERIFICATION, _listed),
}


def _task_marks(task: Any, args: Sequence[Any] | None) -> tuple[Marks, list[str]] | None:
    known = _TASK_MARKS.get(getattr(task, "name", ""))
    if known is None:
        return None
    prefix, ids_of = known
    return marks_for(str(task.app.conf.broker_url), prefix), ids_of(args or ())


@signals.task_prerun.connect
def _unmark_on_start(task: Any = None, args: Sequence[Any] | None = None, **_: Any) -> None:
    found = _task_marks(task, args)
    if found is not None:
        found[0].unmark(found[1])


@signals.task_retry.connect
def _mark_while_retrying(sender: Any = None, request: Any = None, **_: Any) -> None:
    found = _task_marks(sender, getattr(request, "args", None))
    if found is not None:
        found[0].mark(found[1], ttl_s=retry_mark_ttl_s())
