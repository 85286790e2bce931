"""The hand-rolled baseline of the governance tax (``python -m benchmarks dispatch``):
what a user would otherwise write — a Celery task that calls the model through
litellm and inserts the raw output into one Postgres row. It lives here, not
in ``council``; the only Council code it touches is the registration of the
simulated provider with litellm, so that it calls the very same model.

Worker: ``celery -A benchmarks.baseline worker -Q baseline --concurrency 1``
with ``COUNCIL_BROKER_URL`` and ``BENCH_BASELINE_DATABASE_URL`` (a psycopg URL)
set. The task takes the model and messages; the table is ``bench_raw_outputs``.
"""

from __future__ import annotations

import os
from typing import Any

import psycopg
from celery import Celery

QUEUE = "baseline"
# The price map from the installed package, never the network (as the gateway does).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
TABLE = "CREATE TABLE IF NOT EXISTS bench_raw_outputs (id bigserial PRIMARY KEY, model text, output text)"

app = Celery("bench-baseline", broker=os.environ.get("COUNCIL_BROKER_URL"))
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    task_acks_late=True,
    worker_prefetch_multiplier=1,
    task_default_queue=QUEUE,
    broker_connection_retry_on_startup=True,
)
_conn: psycopg.Connection[Any] | None = None


def _connection() -> psycopg.Connection[Any]:
    global _conn
    if _conn is None or _conn.closed:
        _conn = psycopg.connect(os.environ["BENCH_BASELINE_DATABASE_URL"], autocommit=True)
    return _conn


@app.task(name="bench.baseline_call")  # type: ignore[untyped-decorator]
def baseline_call(model: str, messages: list[dict[str, Any]]) -> None:
    from council.agents import gateway

    gateway.preload()  # registers the simulated provider with litellm (once)
    import litellm

    response = litellm.completion(model=model, messages=messages)
    _connection().execute(
        "INSERT INTO bench_raw_outputs (model, output) VALUES (%s, %s)",
        (model, response.choices[0].message.content),
    )
