"""The peer side of ``python -m benchmarks peer``, in a process of its own:
``python -m benchmarks.peer_langgraph BASE_URL DATABASE_URL COUNCILS IN_FLIGHT``.

The same council as Council's side — 3 agents × 2 rounds, round 2 seeing round 1's
answers — as a LangGraph graph with its Postgres checkpointer (``PostgresSaver``,
``durability="sync"``: every step's checkpoint written before the next step). Each agent
node makes one chat completion through litellm (the library Council's gateway calls) to the
same fake OpenAI-compatible model. ``IN_FLIGHT / 3`` councils run at once (their 3 agents
in parallel), so at most ``IN_FLIGHT`` model calls are in flight. After a warm-up council it
prints ``{"ready": …}`` and waits for a line on stdin (the parent reads Postgres's CPU
then), then prints one JSON line: the calls, the wall time, and this process's CPU (every
thread) over the timed part.
"""

from __future__ import annotations

import json
import operator
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, TypedDict

AGENTS = ("alpha", "beta", "gamma")
ROUNDS = 2


class State(TypedDict):
    proposition: str
    answers: Annotated[list[dict[str, Any]], operator.add]


def _graph(base_url: str, database_url: str) -> Any:
    import litellm
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.graph import END, START, StateGraph
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    litellm.suppress_debug_info = True

    def agent(name: str, round_no: int) -> Any:
        def node(state: State) -> dict[str, Any]:
            seen = [a["text"] for a in state["answers"] if a["round"] == round_no - 1]
            prompt = f"Round {round_no}. Proposition: {state['proposition']}\nOthers said: {seen}"
            response = litellm.completion(
                model=f"openai/{name}-model",
                messages=[{"role": "user", "content": prompt}],
                api_base=base_url,
                api_key="council-no-key",
                num_retries=0,
                max_retries=0,
                timeout=300,
            )
            text = response.choices[0].message.content or ""
            return {"answers": [{"agent": name, "round": round_no, "text": text}]}

        return node

    builder = StateGraph(State)
    previous: list[str] = []
    for round_no in range(1, ROUNDS + 1):
        names = [f"{a}_r{round_no}" for a in AGENTS]
        for agent_name, node_name in zip(AGENTS, names, strict=True):
            builder.add_node(node_name, agent(agent_name, round_no))  # type: ignore[call-overload]
            if previous:
                builder.add_edge(previous, node_name)
            else:
                builder.add_edge(START, node_name)
        previous = names
    for node_name in previous:
        builder.add_edge(node_name, END)
    pool = ConnectionPool(
        database_url,
        min_size=4,
        max_size=32,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=True,
    )
    saver = PostgresSaver(pool)  # type: ignore[arg-type]
    saver.setup()
    return builder.compile(checkpointer=saver), pool


def main(argv: list[str]) -> int:
    base_url, database_url, councils, in_flight = argv[0], argv[1], int(argv[2]), int(argv[3])
    graph, pool = _graph(base_url, database_url)

    def council(i: int) -> int:
        config = {"configurable": {"thread_id": f"council-{i}"}}
        state = graph.invoke(
            {"proposition": f"Proposition {i}: the adapter returns the same rows", "answers": []},
            config,
            durability="sync",
        )
        return len(state["answers"])

    council(-1)  # warm-up: imports, the first checkpoint, litellm's first call
    with pool.connection() as conn:
        backends = [int(r["pid"]) for r in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()").fetchall()]  # fmt: skip
    # The parent reads Postgres's CPU, then says go.
    print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
    sys.stdin.readline()
    with ThreadPoolExecutor(max(1, in_flight // len(AGENTS))) as executor:
        cpu0, started = time.process_time(), time.perf_counter()
        calls = sum(executor.map(council, range(councils)))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu0
    print(json.dumps({"calls": calls, "elapsed_s": elapsed, "process_cpu_s": cpu, "backends": backends}))
    sys.stdout.flush()
    pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
