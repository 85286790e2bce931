"""The tree reads as the architecture: imports go one way (docs/architecture.md).

Every import of every module under council/ is read from its
source (function-level imports included) and checked against the layer it
belongs to. Domain depends on nothing of the project; the ledger on the
domain; agents and adapters on the domain; services on the ledger, the
domain, agents and adapters; faces (cli, web, mcp, demo, workers) on services,
the domain's values and the bootstrap — never on the ledger, an agent or an
adapter, and never on another face, except the one command that starts it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Importable from every layer but the domain: errors, settings, the metrics registry and
# the HTTP faces' guard and server.
KERNEL = {
    "council",
    "council.errors",
    "council.config",
    "council.settings",
    "council.urls",
    "council.files",
    "council.metrics",
    "council.httpguard",
    "council.httpserver",
    "council.known_secrets",
}
LAYER_OF = (  # first match wins: module prefix -> layer
    ("council.domain", "domain"),
    ("council.sql", "sql"),
    ("council.ledger", "ledger"),
    ("council.agents", "agents"),
    ("council.adapters", "adapters"),
    ("council.services", "services"),
    ("council.bootstrap", "bootstrap"),
    ("council.stack", "stack"),
    ("council.cli", "cli"),
    ("council.web", "web"),
    ("council.mcp", "mcp"),
    ("council.demo", "demo"),
    ("council.workers", "workers"),
)
FACES = {"cli", "web", "mcp", "demo", "workers"}
ALLOWED = {
    "domain": {"domain"},
    "sql": set(),
    "ledger": {"domain", "sql"},
    "agents": {"domain"},
    "adapters": {"domain"},
    "services": {"domain", "ledger", "agents", "adapters"},
    "bootstrap": {"domain", "ledger", "adapters", "services"},
    "stack": {"ledger"},  # `council up` migrates the embedded database
    **{face: {"domain", "services", "bootstrap"} for face in FACES},
    # The workers are the task queue's consumer side: they define their tasks on the
    # Celery app and clear its coalescing marks (council.adapters.celery_app, .coalesce).
    "workers": {"domain", "services", "bootstrap", "adapters"},
}
# The commands that start another face (or operate the embedded stack) may import it.
STARTS = {
    "council.cli.worker_cmd": {"workers"},
    "council.cli.serve_cmd": {"web"},
    "council.cli.mcp_cmd": {"mcp"},
    "council.cli.stack_cmds": {"stack"},
    "council.cli.demo_cmd": {"demo", "stack"},
}


def _modules() -> dict[str, Path]:
    found = {}
    for base in ("council",):
        for path in (ROOT / base).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(name: str, path: Path) -> set[str]:
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if path.name == "__init__.py" else name.split(".")[: -node.level]
                base = ".".join([*package, base]) if base else ".".join(package)
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    return {t for t in targets if t.split(".")[0] in ("council", "workers")}


def _layer(module: str) -> str | None:
    return next(
        (layer for prefix, layer in LAYER_OF if module == prefix or module.startswith(prefix + ".")), None
    )


def test_imports_follow_the_direction_of_the_layers() -> None:
    modules = _modules()
    wrong = []
    for name, path in sorted(modules.items()):
        layer = _layer(name)
        if layer is None:
            continue  # the kernel modules
        allowed = ALLOWED[layer] | {layer} | STARTS.get(name, set())
        for target in sorted(_imports(name, path)):
            if target in KERNEL or (target not in modules and target.rsplit(".", 1)[0] in KERNEL):
                if (
                    layer == "domain"
                    and target not in ("council.errors",)
                    and not target.startswith("council.errors.")
                ):
                    wrong.append(f"{name} -> {target} (the domain imports nothing of the project)")
                continue
            target_layer = _layer(target)
            if target_layer is not None and target_layer not in allowed:
                wrong.append(f"{name} ({layer}) -> {target} ({target_layer})")
    assert not wrong, "imports against the direction of the layers:\n" + "\n".join(wrong)


def test_the_kernel_depends_on_the_domain_at_most() -> None:
    modules = _modules()
    wrong = [
        f"{name} -> {target}"
        for name in sorted(KERNEL & modules.keys())
        for target in sorted(_imports(name, modules[name]))
        if target not in KERNEL
        and target.rsplit(".", 1)[0] not in KERNEL
        and _layer(target) not in (None, "domain")
    ]
    assert not wrong, "the kernel (errors, settings, files, metrics) imports a layer:\n" + "\n".join(wrong)


def test_every_module_belongs_to_a_layer_or_the_kernel() -> None:
    stray = [name for name in _modules() if _layer(name) is None and name not in KERNEL]
    assert not stray, f"modules outside every layer: {stray} (place them, or name them in the kernel)"


def _public_functions(path: Path) -> list[ast.FunctionDef]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]


def _first_parameter(function: ast.FunctionDef) -> str | None:
    return function.args.args[0].arg if function.args.args else None


def test_helpers_inside_a_callers_transaction_live_apart_from_use_cases() -> None:
    """A service that takes the caller's transaction (``tx``) lives in council/services/in_tx/
    and takes no unit of work; a use case module exports no such helper; no face calls one."""
    modules = _modules()
    wrong = []
    for name, path in sorted(modules.items()):
        if name.startswith("council.services.in_tx."):
            for function in _public_functions(path):
                if _first_parameter(function) != "tx":
                    wrong.append(
                        f"{name}.{function.name} runs in no caller's transaction (first argument tx)"
                    )
                if any(arg.arg == "uow" for arg in function.args.args + function.args.kwonlyargs):
                    wrong.append(f"{name}.{function.name} takes a unit of work: it is a use case")
        elif _layer(name) == "services":
            for function in _public_functions(path):
                if _first_parameter(function) == "tx":
                    wrong.append(f"{name}.{function.name} takes tx: it belongs in council.services.in_tx")
        elif _layer(name) in FACES:
            for target in _imports(name, path):
                if target.startswith("council.services.in_tx"):
                    wrong.append(f"{name} -> {target} (a face has no transaction to lend)")
    assert not wrong, "\n".join(wrong)
