"""Settings are read in one place (issue 32 part 3): no module of council/ (the Celery
tasks in council/workers/ among them) but council/settings.py touches the process
environment — no os.environ (read, written or copied), os.getenv, os.putenv,
``from os import environ`` or getattr(os, "environ").
A child process's environment is built by ``council.settings.child_environment`` and a
variable a library reads itself is set by ``council.settings.export``: both live in the
settings module, so the scan allows nothing anywhere else. Other objects' ``environ``
(a WSGI request's, psutil's ``process.environ()``) are not the process environment."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETTINGS_MODULE = ROOT / "council" / "settings.py"
ENVIRONMENT_NAMES = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})


def environment_uses(source: str, filename: str = "<source>") -> Iterator[str]:
    """``file:line what`` for each use of the process environment in ``source``."""
    tree = ast.parse(source, filename=filename)
    os_names = {"os"}  # names bound to the os module (import os as o)
    direct: set[str] = set()  # names bound to os.environ / os.getenv themselves
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            os_names |= {alias.asname or alias.name for alias in node.names if alias.name == "os"}
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "posix", "nt"):
            for alias in node.names:
                if alias.name in ENVIRONMENT_NAMES or alias.name == "*":
                    yield f"{filename}:{node.lineno} from {node.module} import {alias.name}"
                    direct.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ENVIRONMENT_NAMES
            and isinstance(node.value, ast.Name)
            and node.value.id in os_names
        ):
            yield f"{filename}:{node.lineno} {node.value.id}.{node.attr}"
        elif isinstance(node, ast.Name) and node.id in direct and not isinstance(node.ctx, ast.Store):
            yield f"{filename}:{node.lineno} {node.id}"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in os_names
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in ENVIRONMENT_NAMES
        ):
            yield f"{filename}:{node.lineno} getattr({node.args[0].id}, {node.args[1].value!r})"


def _project_files() -> Iterator[Path]:
    files = sorted((ROOT / "council").rglob("*.py"))
    assert (ROOT / "council" / "workers" / "tasks.py") in files  # the tasks are scanned too
    return iter(files)


def test_no_module_but_the_settings_touches_the_environment() -> None:
    found = [
        use
        for path in _project_files()
        if path != SETTINGS_MODULE
        for use in environment_uses(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert not found, (
        "read the environment through council.settings (settings(), child_environment, export):\n"
        + ("\n".join(found))
    )


def test_the_settings_module_is_where_the_environment_is_read() -> None:
    uses = list(environment_uses(SETTINGS_MODULE.read_text(encoding="utf-8")))
    assert uses, "the scan must see council/settings.py's own reads, or it sees nothing"


@pytest.mark.parametrize(
    "planted",
    [
        'import os\nX = os.environ.get("COUNCIL_X")\n',
        'import os\nX = os.environ["COUNCIL_X"]\n',
        'import os\nX = os.getenv("COUNCIL_X", "1")\n',
        'import os\nX = "COUNCIL_X" in os.environ\n',
        "import os\nX = dict(os.environ)\n",
        "import os\nfor name in os.environ:\n    pass\n",
        'import os\nos.environ["X"] = "1"\n',
        'import os\nos.environ.setdefault("X", "1")\n',
        'import os as system\nX = system.environ.get("COUNCIL_X")\n',
        'from os import environ\nX = environ.get("COUNCIL_X")\n',
        'from os import getenv as read\nX = read("COUNCIL_X")\n',
        'import os\nX = getattr(os, "environ")\n',
        'import subprocess, os\nsubprocess.run(["true"], env=os.environ.copy())\n',
        'def f():\n    import os\n    return os.environ.get("COUNCIL_X")\n',
    ],
)
def test_the_scan_finds_a_planted_read(planted: str) -> None:
    assert list(environment_uses(planted)), planted


@pytest.mark.parametrize(
    "allowed",
    [
        'from council.settings import settings\nX = settings().variable("OPENAI_API_KEY")\n',
        'from council.settings import child_environment\nENV = child_environment(COUNCIL_HOME="/x")\n',
        'def app(environ, start_response):\n    return environ.get("HTTP_AUTHORIZATION")\n',
        'import psutil\nX = psutil.Process().environ().get("COUNCIL_HOME")\n',
        "import os\nX = os.getpid()\nY = os.path.join('a', 'b')\n",
    ],
)
def test_the_scan_leaves_other_environ_alone(allowed: str) -> None:
    assert not list(environment_uses(allowed)), allowed


def test_a_read_planted_in_a_real_module_is_reported_at_its_line() -> None:
    source = (ROOT / "council" / "adapters" / "celery.py").read_text(encoding="utf-8")
    assert not list(environment_uses(source))
    planted = "import os\n" + source + 'DELAY = float(os.environ.get("COUNCIL_X", "0"))\n'
    line = planted.count("\n")
    assert list(environment_uses(planted, "celery.py")) == [f"celery.py:{line} os.environ"]
