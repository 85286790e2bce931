"""`council serve`: the HTTP API, its event stream and the live page, on uvicorn."""

from __future__ import annotations

import copy
import socket
from typing import Annotated, Any

import typer

from council.cli.common import JsonOpt
from council.cli.output import console, emit, returns, warn
from council.errors import BadInput

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@returns("council.domain.results.stack:Serving")
def serve_cmd(
    host: Annotated[str, typer.Option("--host", help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port (0: any free one).", min=0, max=65535)] = 8787,
    insecure_open: Annotated[
        bool,
        typer.Option(
            "--insecure-open",
            help="Serve off loopback with no token: every read open to anyone who can reach it.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Serve the HTTP API, server-sent events and the live page until interrupted.

    Writes need the bearer token in COUNCIL_API_TOKEN and are refused when it is
    unset; with it (or COUNCIL_API_READ_TOKEN) set, reads need a token too. Off
    loopback the server refuses to start without a token unless --insecure-open
    says, in so many words, that its reads are open. Tokens have at least 16
    characters. Requests must name this host (loopback, --host, or COUNCIL_ALLOWED_HOSTS).
    A connection's request head must arrive within COUNCIL_HTTP_HEADER_TIMEOUT_S (10 s)
    and an idle keep-alive connection is closed after COUNCIL_HTTP_IDLE_TIMEOUT_S (5 s).
    """
    from council import httpserver
    from council.domain.results.stack import Serving
    from council.web.app import create_app
    from council.web.security import READ_TOKEN_ENV, TOKEN_ENV, Policy

    policy = Policy.from_env(bound_host=host)
    timeouts = httpserver.Timeouts.from_env()
    if host not in LOOPBACK and not policy.reads_guarded:
        if not insecure_open:
            raise BadInput(
                f"refusing to serve on {host} without {TOKEN_ENV} or {READ_TOKEN_ENV}: every read of the "
                "ledger would be open to anyone who can reach it (set a token, or pass --insecure-open)"
            )
        warn(
            f"serving on {host} without {TOKEN_ENV} or {READ_TOKEN_ENV} (--insecure-open): every read of "
            "the ledger is open to anyone who can reach it, and writes are refused"
        )
    app = create_app(policy=policy)
    sock = bind(host, port)
    bound_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{bound_port}/"
    writes = "need the write token" if policy.write_token else f"off: no {TOKEN_ENV}"
    reads = "need a token" if policy.reads_guarded else "open"
    emit(
        Serving(
            url=url,
            host=host,
            port=bound_port,
            writes_enabled=policy.write_token is not None,
            reads_need_token=policy.reads_guarded,
        ),
        as_json,
        lambda d: console.print(f"serving {d['url']}  (reads {reads}; writes {writes})"),
    )
    httpserver.serve(app, sock, log_to_stderr(), timeouts)


def bind(host: str, port: int) -> socket.socket:
    """Bind before serving, so the printed URL names the real port (``--port 0``)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        raise BadInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def log_to_stderr() -> dict[str, Any]:
    """uvicorn's logging, all on stderr (stdout carries the --json document only), and no
    query string in an access line."""
    from uvicorn.config import LOGGING_CONFIG

    logging_config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    logging_config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    logging_config.setdefault("filters", {})["no_query"] = {"()": "council.httpguard.QueryFreeAccessLog"}
    logging_config["handlers"]["access"]["filters"] = ["no_query"]
    return logging_config


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
