"""The workers' side of coalescing (``council.adapters.coalesce``): a task clears
the marks of the ids in its arguments when it starts, and sets them again,
for a bounded time, while a retry of it waits."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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


def _first(args: Sequence[object]) -> list[str]:
    return [str(args[0])] if args else []


def _listed(args: Sequence[object]) -> list[str]:
    if not args or args[0] is None:
        return []
    ids = args[0]
    if not isinstance(ids, Iterable):
        raise TypeError(f"a task's first argument lists ids, not {type(ids).__name__}")
    return [str(i) for i in ids]


# The marks each task clears when it starts and sets again when it retries: the ids in its arguments.
_TASK_MARKS: dict[str, tuple[str, Callable[[Sequence[object]], list[str]]]] = {
    task_names.EXECUTE_RUN: (RUN, _first),
    task_names.EVALUATE_NODES: (EVALUATION, _listed),
    task_names.CASCADE: (CASCADE, _listed),
    task_names.REVERIFY: (REVERIFICATION, _listed),
}


def _task_marks(task: Any, args: Sequence[object] | None) -> tuple[Marks, list[str]] | None:
    known = _TASK_MARKS.get(getattr(task, "name", ""))
    if known is None:
        return None
    prefix, ids_of = known
    return marks_for(str(task.app.conf.broker_url), prefix), ids_of(args or ())


@signals.task_prerun.connect
def _unmark_on_start(task: Any = None, args: Sequence[object] | None = None, **_: object) -> None:
    found = _task_marks(task, args)
    if found is not None:
        found[0].unmark(found[1])


@signals.task_retry.connect
def _mark_while_retrying(sender: object = None, request: object = None, **_: object) -> None:
    found = _task_marks(sender, getattr(request, "args", None))
    if found is not None:
        found[0].mark(found[1], ttl_s=retry_mark_ttl_s())
