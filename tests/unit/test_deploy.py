"""deploy/ runs only what exists: every command the Dockerfile, the compose file
and the Kubernetes manifests run is a real `council` command (resolved through
the Typer app, options included) or a real `celery -A <app> worker|beat|flower|inspect`
invocation, and every variable they set for the project's containers is one the
project (or a library it configures) reads."""

from __future__ import annotations

import ast
import functools
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import typer
import yaml
from typer.core import TyperGroup

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PROJECT_IMAGE = "council"  # deploy/Dockerfile's image, under any registry and tag
OTHER_IMAGES = {"postgres", "redis", "prom/prometheus", "grafana/grafana"}
CELERY_COMMANDS = {"worker", "beat", "flower", "inspect"}

# Variables no code of ours names literally, each with what reads it.
ALLOWED_ELSEWHERE = {
    "ANTHROPIC_API_KEY": "claude's key, read by the gateway through the profile's api_key_env (profiles.py)",
    "OPENAI_API_KEY": "codex's key, read by the gateway through the profile's api_key_env (profiles.py)",
    "PYTHONUNBUFFERED": "the Python interpreter: log lines reach the container log as they are written",
    "FLOWER_UNAUTHENTICATED_API": "Flower's request handlers, through os.environ (not one of its options)",
}
PROVIDER_KEYS = {name for name in ALLOWED_ELSEWHERE if name.endswith("_API_KEY")}


# ------------------------------------------------------------ what the project reads


def _source_trees() -> Iterator[ast.Module]:
    for package in ("council",):
        for path in sorted((ROOT / package).rglob("*.py")):
            yield ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ" and _named(node.value, "os")


def _named(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _variable_expressions(node: ast.AST) -> Iterator[ast.expr]:
    """The expression naming the variable in os.getenv(X), os.environ.get/setdefault/pop(X),
    os.environ[X], X in os.environ, and council.settings' export(X, …) and settings().variable(X)
    (a variable named at run time, such as a provider key's)."""
    if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
        func = node.func
        if (
            (func.attr == "getenv" and _named(func.value, "os"))
            or (func.attr in ("get", "setdefault", "pop") and _is_environ(func.value))
            or func.attr in ("variable", "export")
        ):
            yield node.args[0]
    elif isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Name):
        if node.func.id == "export":  # council.settings.export(VARIABLE, value)
            yield node.args[0]
    elif isinstance(node, ast.Subscript) and _is_environ(node.value):
        yield node.slice
    elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
        yield node.left


@functools.cache
def variables_the_project_reads() -> frozenset[str]:
    """Every variable read through os.environ / os.getenv in council/ (the Celery tasks included), by
    its literal name or through a module constant (``TOKEN_ENV = "COUNCIL_API_TOKEN"``)."""
    trees = list(_source_trees())
    constants: dict[str, set[str]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                        constants.setdefault(target.id, set()).add(node.value.value)
    read: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            for expression in _variable_expressions(node):
                if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
                    read.add(expression.value)
                elif isinstance(expression, ast.Name):
                    read |= constants.get(expression.id, set())
                elif isinstance(expression, ast.Attribute):
                    read |= constants.get(expression.attr, set())
    return frozenset(read | _settings_reads())


def _settings_reads() -> set[str]:
    """Every variable council.settings.Settings.from_environ names: each upper-case string
    a call inside it is given (``env.number("COUNCIL_RUN_LEASE_S", …)``, ``environ.get(…)``)."""
    tree = ast.parse((ROOT / "council" / "settings.py").read_text(encoding="utf-8"))
    parse = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "from_environ")
    return {
        argument.value
        for node in ast.walk(parse)
        if isinstance(node, ast.Call)
        for argument in node.args
        if isinstance(argument, ast.Constant)
        and isinstance(argument.value, str)
        and re.fullmatch(r"[A-Z][A-Z0-9_]+", argument.value)
    }


def unknown_variables(names: set[str]) -> list[str]:
    from flower.options import options as flower_options

    known = variables_the_project_reads() | ALLOWED_ELSEWHERE.keys()
    # Flower reads FLOWER_<OPTION> for each of its options.
    return sorted(
        name
        for name in names
        if name not in known
        and not (name.startswith("FLOWER_") and name.removeprefix("FLOWER_").lower() in flower_options)
    )


# ------------------------------------------------------------- what a command must be


@functools.cache
def _council() -> TyperGroup:
    from council.cli.main import app, register_commands

    register_commands()
    command = typer.main.get_command(app)
    assert isinstance(command, TyperGroup)
    return command


def check_command(argv: list[str]) -> list[str]:
    """Problems with one command line (none when it is a real invocation)."""
    if not argv:
        return ["an empty command (the image's default is `council --help`)"]
    if argv[0] == "council":
        return _check_council(argv[1:])
    if argv[0] == "celery":
        return _check_celery(argv[1:])
    return [f"`{shlex.join(argv)}` is neither a council nor a celery command"]


def _check_council(args: list[str]) -> list[str]:
    command: Any = _council()
    ctx = typer.Context(command, info_name="council")
    path = ["council"]
    while isinstance(command, TyperGroup):
        if args == ["--help"]:
            return []
        if not args or args[0].startswith("-"):
            return [f"`{shlex.join(path + args)}` names no sub-command"]
        sub = command.get_command(ctx, args[0])
        if sub is None:
            return [f"`{shlex.join(path + args[:1])}` is no command of this project"]
        path.append(args.pop(0))
        ctx = typer.Context(sub, info_name=path[-1], parent=ctx)
        command = sub
    return _parsed(command, path, args, ctx.parent)


def _parsed(command: Any, path: list[str], args: list[str], parent: Any) -> list[str]:
    """Parse the arguments as the command would (options, types, choices), running nothing."""
    if "--help" in args:
        return []
    try:
        command.make_context(path[-1], list(args), parent=parent)
    except (click.ClickException, typer.TyperException) as exc:
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        return [f"`{shlex.join(path + args)}`: {message}"]
    return []


def _check_celery(args: list[str]) -> list[str]:
    from celery.app.utils import find_app
    from celery.bin.base import CLIContext
    from celery.bin.celery import celery

    if len(args) >= 2 and args[0] in ("-A", "--app"):
        app_name, rest = args[1], args[2:]
    elif args and args[0].startswith("--app="):
        app_name, rest = args[0].removeprefix("--app="), args[1:]
    else:
        return [f"`celery {shlex.join(args)}` does not start with -A APP"]
    try:
        app = find_app(app_name)
    except (ImportError, AttributeError) as exc:
        return [f"celery -A {app_name}: no Celery app there ({exc})"]
    if not rest or rest[0] not in CELERY_COMMANDS:
        return [f"`celery -A {app_name} {shlex.join(rest)}`: expected one of {sorted(CELERY_COMMANDS)}"]
    ctx = click.Context(celery, info_name="celery", obj=CLIContext(app=app, no_color=True, workdir=None))
    sub = celery.get_command(ctx, rest[0])
    assert sub is not None
    if rest[0] == "flower":
        return _check_flower(rest[1:])
    return _parsed(sub, ["celery", "-A", app_name, rest[0]], rest[1:], ctx)


def _check_flower(args: list[str]) -> list[str]:
    """Flower hands its arguments to tornado, which takes only --name=value and
    silently stops at anything else."""
    from flower.options import options

    return [
        f"celery flower: {arg!r} is not --OPTION=VALUE of one of flower's options"
        for arg in args
        if not arg.startswith("--") or arg[2:].split("=", 1)[0] not in options
    ]


# ------------------------------------------------------------- what deploy/ runs


def _image_name(image: str) -> str:
    without_tag = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    return without_tag.removeprefix("docker.io/").removeprefix("library/")


def _argv(command: str | list[str]) -> list[str]:
    return shlex.split(command) if isinstance(command, str) else [str(part) for part in command]


def _dockerfile() -> tuple[list[list[str]], set[str]]:
    """The Dockerfile's CMD/ENTRYPOINT command lines and the variables its ENV sets."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text(encoding="utf-8"))
    commands: list[list[str]] = []
    variables: set[str] = set()
    for line in text.splitlines():
        instruction, _, rest = line.strip().partition(" ")
        if instruction in ("CMD", "ENTRYPOINT"):
            commands.append(json.loads(rest))
        elif instruction == "ENV":
            variables |= {pair.split("=", 1)[0] for pair in shlex.split(rest)}
    return commands, variables


def _compose() -> dict[str, Any]:
    document = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def _compose_runs() -> Iterator[tuple[str, str, list[str], set[str]]]:
    """(where, image, command line, variables set) for each compose service and healthcheck."""
    for name, service in _compose()["services"].items():
        image = str(service.get("image", ""))
        environment = service.get("environment") or {}
        if isinstance(environment, list):
            environment = dict(item.split("=", 1) for item in environment)
        variables = set(environment)
        argv = _argv(service.get("entrypoint", [])) + _argv(service.get("command", []))
        yield f"compose {name}", image, argv or _dockerfile()[0][-1], variables
        test = (service.get("healthcheck") or {}).get("test")
        if test and test[0] in ("CMD", "CMD-SHELL"):
            argv = test[1:] if test[0] == "CMD" else shlex.split(test[1])
            yield f"compose {name} healthcheck", image, argv, set()


def _manifests() -> list[tuple[Path, dict[str, Any]]]:
    return [
        (path, document)
        for path in sorted((DEPLOY / "k8s").glob("*.yaml"))
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if document
    ]


def _pod_containers(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        for key in ("containers", "initContainers"):
            yield from node.get(key) or []
        for value in node.values():
            yield from _pod_containers(value)
    elif isinstance(node, list):
        for item in node:
            yield from _pod_containers(item)


def _env_sources() -> dict[tuple[str, str], set[str]]:
    """The keys of each ConfigMap and Secret in deploy/k8s, by (kind, name)."""
    return {
        (document["kind"], document["metadata"]["name"]): set(document.get("data") or {})
        | set(document.get("stringData") or {})
        for _, document in _manifests()
        if document.get("kind") in ("ConfigMap", "Secret")
    }


def _k8s_runs() -> Iterator[tuple[str, str, list[str], set[str]]]:
    sources = _env_sources()
    for path, document in _manifests():
        for container in _pod_containers(document.get("spec")):
            where = f"{path.name} {document['kind']}/{document['metadata']['name']} {container['name']}"
            variables = {item["name"] for item in container.get("env") or []}
            for source in container.get("envFrom") or []:
                for kind, ref in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                    # One that no manifest defines shows up as an unknown variable.
                    if ref in source:
                        variables |= sources.get((kind, source[ref]["name"]), {f"<missing {kind}>"})
            argv = _argv(container.get("command", [])) + _argv(container.get("args", []))
            yield where, container["image"], argv or _dockerfile()[0][-1], variables
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                exec_probe = (container.get(probe) or {}).get("exec")
                if exec_probe:
                    yield f"{where} {probe}", container["image"], _argv(exec_probe["command"]), set()


def deploy_runs() -> list[tuple[str, str, list[str], set[str]]]:
    commands, variables = _dockerfile()
    from_dockerfile = [("Dockerfile", PROJECT_IMAGE, argv, variables) for argv in commands]
    return [*from_dockerfile, *_compose_runs(), *_k8s_runs()]


# ------------------------------------------------------------------------ tests


def test_every_command_deploy_runs_in_the_project_image_is_real() -> None:
    # Given every command line of the Dockerfile, the compose file and the manifests
    runs = [run for run in deploy_runs() if _image_name(run[1]) == PROJECT_IMAGE]
    # Then each resolves to a real council command or celery invocation, options included
    problems = [f"{where}: {problem}" for where, _, argv, _ in runs for problem in check_command(argv)]
    assert problems == []
    # And every role is there: migrations, a worker per queue, beat, web and flower, in both
    for prefix in ("compose ", "workers.yaml", "beat.yaml", "web.yaml", "flower.yaml", "migrate-job.yaml"):
        assert any(where.startswith(prefix) for where, *_ in runs), prefix
    lines = {shlex.join(argv) for _, _, argv, _ in runs}
    for queue in ("runs", "commit", "maintenance"):
        assert sum(f"council worker --queues {queue} " in line for line in lines) >= 2, queue


def test_every_container_runs_the_project_image_or_a_known_service() -> None:
    images = {_image_name(image) for _, image, _, _ in deploy_runs()}
    images |= {_image_name(str(s["image"])) for s in _compose()["services"].values()}
    assert images <= {PROJECT_IMAGE} | OTHER_IMAGES


def test_every_variable_deploy_sets_for_the_project_is_one_it_reads() -> None:
    # Given every variable set for a container of the project image (env, envFrom, ENV)
    problems = {
        where: unknown
        for where, image, _, variables in deploy_runs()
        if _image_name(image) == PROJECT_IMAGE and (unknown := unknown_variables(variables))
    }
    # Then each is read by the project or is allow-listed with its reader
    assert problems == {}


def test_the_allow_list_holds_only_what_the_source_scan_cannot_see() -> None:
    assert not ALLOWED_ELSEWHERE.keys() & variables_the_project_reads()
    profiles_source = (ROOT / "council" / "agents" / "profiles.py").read_text(encoding="utf-8")
    assert all(f'"{key}"' in profiles_source for key in PROVIDER_KEYS)


def test_the_scan_finds_variables_read_literally_and_through_constants() -> None:
    read = variables_the_project_reads()
    # what Settings reads, export("…") (a variable a library reads), settings().variable(CONSTANT)
    assert {"COUNCIL_DATABASE_URL", "COUNCIL_API_TOKEN", "LITELLM_LOCAL_MODEL_COST_MAP"} <= read
    assert {"PROMETHEUS_MULTIPROC_DIR", "COUNCIL_METRICS_PORT"} <= read


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["council", "wroker", "--queues", "runs"], "wroker"),
        (["council", "worker", "--queus", "runs"], "--queus"),
        (["council", "db", "upgarde"], "upgarde"),
        (["council", "serve", "--port", "eighty"], "eighty"),
        (["celery", "-A", "workers.nope", "worker"], "workers.nope"),
        (["celery", "-A", "council.workers.app", "wroker"], "wroker"),
        (["celery", "-A", "council.workers.app", "worker", "--concurency", "2"], "--concurency"),
        (["celery", "-A", "council.workers.app", "flower", "--port", "5555"], "'5555'"),
        (["celery", "-A", "council.workers.app", "flower", "--adress=0.0.0.0"], "--adress"),
        (["celery", "worker"], "-A"),
        (["python", "-m", "council.cli", "worker"], "neither"),
    ],
)
def test_the_checker_catches_a_command_that_does_not_exist(argv: list[str], complaint: str) -> None:
    problems = check_command(argv)
    assert problems and complaint in problems[0]


def test_the_checker_accepts_real_invocations() -> None:
    for argv in (
        ["council", "db", "upgrade", "--json"],
        ["council", "worker", "--queues", "runs", "--concurrency", "4", "--beat"],
        ["council", "--help"],
        ["celery", "--app=council.workers.app", "inspect", "ping", "-d", "runs@host"],
        ["celery", "-A", "council.workers.app", "flower", "--basic-auth=user:password"],
    ):
        assert check_command(argv) == [], argv


def test_the_checker_catches_a_misspelt_variable() -> None:
    assert unknown_variables({"COUNCIL_DATABSE_URL", "COUNCIL_DATABASE_URL", "FLOWER_BASIC_AUTH"}) == [
        "COUNCIL_DATABSE_URL"
    ]
    assert unknown_variables({"FLOWER_NO_SUCH_OPTION"}) == ["FLOWER_NO_SUCH_OPTION"]


def test_kubernetes_runs_one_beat_scales_the_runs_workers_and_commits_no_secret() -> None:
    documents = {(d["kind"], d["metadata"]["name"]): d for _, d in _manifests() if "metadata" in d}
    # One scheduler, never two during a rollout
    beat = documents[("Deployment", "council-beat")]["spec"]
    assert beat["replicas"] == 1 and beat["strategy"]["type"] == "Recreate"
    # The autoscaler targets the runs workers' Deployment
    target = documents[("HorizontalPodAutoscaler", "council-worker-runs")]["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", "council-worker-runs")
    # The secret is a template: keys and tokens empty, URLs placeholders
    secret = documents[("Secret", "council-secrets")]["stringData"]
    assert all(secret[key] == "" for key in secret if key.endswith(("_API_KEY", "_TOKEN")))
    assert all(
        "PASSWORD" in value or "HOST" in value for key, value in secret.items() if key.endswith("_URL")
    )


def test_compose_mounts_and_scrapes_what_exists() -> None:
    compose = _compose()
    # Every file or directory mounted from deploy/ exists
    for service in compose["services"].values():
        for volume in service.get("volumes") or []:
            source = volume.split(":", 1)[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), source
    # Prometheus scrapes services that exist
    scrape = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text(encoding="utf-8"))
    hosts = {
        target.split(":", 1)[0]
        for job in scrape["scrape_configs"]
        for config in job.get("static_configs", [])
        for target in config["targets"]
    }
    hosts |= {
        name
        for job in scrape["scrape_configs"]
        for sd in job.get("dns_sd_configs", [])
        for name in sd["names"]
    }
    assert hosts <= compose["services"].keys()
