"""`council mcp`: the MCP server for outside agents (stdio by default, streamable HTTP with --http)."""

from __future__ import annotations

from typing import Annotated

import typer

from council.cli.common import JsonOpt, council
from council.cli.output import console, emit, returns
from council.cli.serve_cmd import LOOPBACK, bind, log_to_stderr
from council.config import API_TOKEN_ENV, api_token
from council.errors import BadInput, ConfigError

PATH = "/mcp"


@returns("council.domain.results.stack:Serving")
def mcp_cmd(
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[
        str, typer.Option("--host", help="With --http: address to bind (loopback).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="With --http: TCP port (0: any free one).", min=0)
    ] = 8788,
    as_json: JsonOpt = False,
) -> None:
    """Serve Council's MCP tools to an outside agent until its client disconnects
    (stdio) or until interrupted (--http).

    Over stdio the client owns stdout, so nothing else is printed there (--json
    goes with --http). Over HTTP every request needs COUNCIL_API_TOKEN as a
    bearer token, and the server refuses to start without it. Each MCP session
    acts only for the runs it began; what it is served for a run is recorded as
    that run's exposures. When a session ends (or the server stops), the runs it
    began and never answered end failed, with the reason.
    """
    from council.mcp.server import build_server

    if not http:
        if as_json:
            raise BadInput("--json goes with --http: over stdio, stdout carries the protocol")
        server = build_server(council().pooled())
        try:
            server.run("stdio")
        finally:
            server.end_sessions()
        return
    token = api_token()
    if token is None:
        raise ConfigError(f"council mcp --http needs {API_TOKEN_ENV}: every request must carry it")
    from council.domain.results.stack import Serving
    from council.httpguard import Policy

    Policy.from_env(bound_host=host)  # a token too short to be one is refused before anything starts
    from council import httpserver
    from council.mcp import http as mcp_http

    timeouts = httpserver.Timeouts.from_env()

    sock = bind(host, port)
    bound_port = sock.getsockname()[1]
    server = build_server(council().pooled(), host=host if host in LOOPBACK else "0.0.0.0", port=bound_port)  # noqa: S104
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{bound_port}{PATH}"
    emit(
        Serving(url=url, host=host, port=bound_port, writes_enabled=True, reads_need_token=True),
        as_json,
        lambda d: console.print(f"MCP over streamable HTTP at {d['url']} (bearer token {API_TOKEN_ENV})"),
    )
    try:
        mcp_http.serve(server, sock, token, log_to_stderr(), timeouts, bound_host=host)
    finally:
        server.end_sessions()


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_cmd)
