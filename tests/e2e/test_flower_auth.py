"""Flower as deploy/ runs it (its command and environment from the compose file), as a
real process on a real Redis: its pages and its API need the basic-auth login."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port
from tests.unit.test_deploy import _compose

LOGIN = ("operator", "flower-test-password")


@pytest.fixture
def flower(redis_url: str, tmp_path: Path) -> Iterator[str]:
    service = _compose()["services"]["flower"]
    argv = [a for a in service["command"] if not a.startswith(("--address=", "--port="))]
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COUNCIL_", "FLOWER_"))}
    env.update(
        COUNCIL_BROKER_URL=redis_url,
        FLOWER_BASIC_AUTH=":".join(LOGIN),
        FLOWER_UNAUTHENTICATED_API=service["environment"]["FLOWER_UNAUTHENTICATED_API"],
        COUNCIL_HOME=str(tmp_path),
    )
    assert argv[0] == "celery"
    with (tmp_path / "flower.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", *argv, "--address=127.0.0.1", f"--port={port}"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "flower.log").read_text()[-2000:]
            try:
                httpx.get(f"{url}/healthcheck", timeout=2)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "flower did not answer"
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def test_flowers_pages_and_api_need_the_login(flower: str) -> None:
    for path in ("/", "/workers", "/api/workers", "/api/tasks"):
        # Without the login, or with a wrong one, nothing is shown
        assert httpx.get(f"{flower}{path}").status_code == 401, path
        assert httpx.get(f"{flower}{path}", auth=("operator", "guess")).status_code == 401, path
    # With it, pages and API answer
    assert httpx.get(f"{flower}/", auth=LOGIN, follow_redirects=True).status_code == 200
    assert httpx.get(f"{flower}/api/workers", auth=LOGIN, timeout=30).status_code == 200
