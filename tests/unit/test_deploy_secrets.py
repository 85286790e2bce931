"""deploy/ holds no credential and hands each container only what it needs (docs/architecture.md §11):
every secret comes from the environment (compose: ``${VAR:?…}``) or a Kubernetes
Secret, Flower and Redis need a login, the owner of the tables is the migrate job's
alone, and the web answers to the names it is reached by."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml

from tests.unit.test_deploy import DEPLOY, _compose, _manifests, _pod_containers

SECRET_NAME = re.compile(r"(PASSWORD|TOKEN|SECRET|_API_KEY|_AUTH)$")
# A reference to a variable: required (":?why") or optional with an empty default (":-").
REFERENCE = re.compile(r"^\$\{(?P<name>[A-Z0-9_]+)(?P<op>:\?[^}]+|:-)?\}$")
CREDENTIALS_IN_URL = re.compile(r"://[^:/@\s]*:([^@\s]*)@")
PLACEHOLDER = re.compile(r"^[A-Z_]+$")  # APP_PASSWORD in a Secret template's URL


def _strings(node: Any, where: str) -> Iterator[tuple[str, str]]:
    """(where, string) for every string in a YAML document."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, f"{where}[{i}]")
    elif isinstance(node, str):
        yield where, node


def _environment(service: dict[str, Any]) -> dict[str, str]:
    environment = service.get("environment") or {}
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    return {str(k): str(v) for k, v in environment.items()}


def _required(value: str) -> str | None:
    """The variable ``value`` requires (``${NAME:?why}``), else None."""
    match = REFERENCE.match(value)
    return match["name"] if match and (match["op"] or "").startswith(":?") else None


def _k8s_documents() -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for _, d in _manifests() if "metadata" in d}


def _k8s_containers() -> Iterator[tuple[str, dict[str, Any]]]:
    for path, document in _manifests():
        for container in _pod_containers(document.get("spec")):
            yield f"{path.name} {container['name']}", container


def _secret_refs(container: dict[str, Any]) -> set[str]:
    refs = {s["secretRef"]["name"] for s in container.get("envFrom") or [] if "secretRef" in s}
    return refs | {
        e["valueFrom"]["secretKeyRef"]["name"]
        for e in container.get("env") or []
        if "secretKeyRef" in (e.get("valueFrom") or {})
    }


# ------------------------------------------------------------------ compose


def test_compose_takes_every_secret_from_the_environment_and_sets_no_default() -> None:
    compose = _compose()
    problems = []
    for name, service in compose["services"].items():
        for variable, value in _environment(service).items():
            # A secret-named variable is a reference, required or empty by default, never a literal
            if SECRET_NAME.search(variable) and not REFERENCE.match(value):
                problems.append(f"{name}: {variable}={value!r}")
    for where, text in _strings(compose, "compose"):
        # A password in a URL is a required reference too
        for password in CREDENTIALS_IN_URL.findall(text):
            if _required(password) is None:
                problems.append(f"{where}: a URL with the password {password!r}")
    assert problems == []


def test_every_required_variable_is_named_in_the_compose_files_header() -> None:
    text = (DEPLOY / "docker-compose.yml").read_text(encoding="utf-8")
    header = text.split("\nname:", 1)[0]
    required = set(re.findall(r"\$\{([A-Z0-9_]+):\?", text))
    assert {"POSTGRES_PASSWORD", "COUNCIL_APP_DB_PASSWORD", "REDIS_PASSWORD", "FLOWER_BASIC_AUTH"} <= required
    assert sorted(v for v in required if v not in header) == []


def test_compose_gives_the_owner_to_the_migration_only_and_the_app_role_to_the_rest() -> None:
    services = _compose()["services"]
    owners = {
        name
        for name, service in services.items()
        for _, text in _strings(service, name)
        if "${POSTGRES_PASSWORD" in text
    }
    # The owner's password: the server, the migration and the job that sets the roles' passwords
    assert owners == {"postgres", "migrate", "db-roles"}
    assert _environment(services["migrate"]) == {
        "COUNCIL_MIGRATE_DATABASE_URL": _environment(services["migrate"])["COUNCIL_MIGRATE_DATABASE_URL"]
    }
    # Everyone else who reaches the ledger does so as council_app
    urls = {
        name: env["COUNCIL_DATABASE_URL"]
        for name, service in services.items()
        if "COUNCIL_DATABASE_URL" in (env := _environment(service))
    }
    assert urls and all(url.startswith("postgresql://council_app:${") for url in urls.values()), urls
    # And the dashboard role's password comes from the environment, to the job and to Grafana
    for name in ("db-roles", "grafana"):
        assert "${COUNCIL_DASHBOARD_PASSWORD:?" in str(services[name]["environment"]), name


def test_compose_flower_and_redis_need_their_logins() -> None:
    from flower.utils import strtobool

    services = _compose()["services"]
    flower = _environment(services["flower"])
    # Flower: basic auth from the environment; its API is not opened without it
    assert _required(flower["FLOWER_BASIC_AUTH"]) == "FLOWER_BASIC_AUTH"
    assert not strtobool(flower["FLOWER_UNAUTHENTICATED_API"])
    # And it is given the broker only: no database, no provider key
    assert set(flower) == {"COUNCIL_BROKER_URL", "FLOWER_BASIC_AUTH", "FLOWER_UNAUTHENTICATED_API"}
    # Redis: a required password, no CONFIG; every broker URL carries the password
    command = services["redis"]["command"]
    assert _required(command[command.index("--requirepass") + 1]) == "REDIS_PASSWORD"
    renamed = {
        command[i + 1] for i, arg in enumerate(command) if arg == "--rename-command" and command[i + 2] == ""
    }
    assert {"CONFIG", "DEBUG", "MODULE"} <= renamed
    brokers = [
        env["COUNCIL_BROKER_URL"]
        for s in services.values()
        if "COUNCIL_BROKER_URL" in (env := _environment(s))
    ]
    assert brokers and all(url.startswith("redis://:${REDIS_PASSWORD:?") for url in brokers)


def test_compose_web_needs_a_token_and_answers_to_the_name_prometheus_scrapes() -> None:
    compose = _compose()
    web = _environment(compose["services"]["web"])
    assert _required(web["COUNCIL_API_READ_TOKEN"]) == "COUNCIL_API_READ_TOKEN"
    scrape = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text(encoding="utf-8"))
    [job] = [j for j in scrape["scrape_configs"] if j["job_name"] == "council-web"]
    hosts = {target.split(":", 1)[0] for config in job["static_configs"] for target in config["targets"]}
    assert hosts <= {h.strip() for h in web["COUNCIL_ALLOWED_HOSTS"].split(",")}
    # Prometheus sends the read token, from a compose secret filled from the environment
    [secret] = compose["services"]["prometheus"]["secrets"]
    assert job["authorization"]["credentials_file"] == f"/run/secrets/{secret}"
    assert compose["secrets"][secret] == {"environment": "COUNCIL_API_READ_TOKEN"}


# --------------------------------------------------------------- kubernetes


def test_kubernetes_secrets_are_templates_and_no_container_holds_a_literal_secret() -> None:
    documents = _k8s_documents()
    problems = []
    for (kind, name), document in documents.items():
        data = {**(document.get("data") or {}), **(document.get("stringData") or {})}
        if kind == "Secret":
            # A template: empty values, URLs with placeholder passwords
            for key, value in data.items():
                passwords = CREDENTIALS_IN_URL.findall(value)
                if (passwords and not all(PLACEHOLDER.match(p) for p in passwords)) or (
                    not passwords and value != ""
                ):
                    problems.append(f"Secret/{name}: {key}={value!r}")
        elif kind == "ConfigMap":
            problems += [f"ConfigMap/{name}: {key}" for key in data if SECRET_NAME.search(key)]
    for where, container in _k8s_containers():
        for entry in container.get("env") or []:
            if SECRET_NAME.search(entry["name"]) and "secretKeyRef" not in (entry.get("valueFrom") or {}):
                problems.append(f"{where}: {entry['name']} is not from a Secret")
    assert problems == []
    assert {name for kind, name in documents if kind == "Secret"} == {
        "council-secrets",
        "council-provider-keys",
        "council-migrate",
        "council-flower",
    }


def test_kubernetes_gives_the_owner_to_the_migrate_job_only() -> None:
    documents = _k8s_documents()
    holders = {
        where for where, container in _k8s_containers() if "council-migrate" in _secret_refs(container)
    }
    assert holders and all(where.startswith("migrate-job.yaml ") for where in holders)
    app_url = documents[("Secret", "council-secrets")]["stringData"]["COUNCIL_DATABASE_URL"]
    assert app_url.startswith("postgresql://council_app:")
    migrate = documents[("Secret", "council-migrate")]["stringData"]
    assert {"COUNCIL_MIGRATE_DATABASE_URL", "COUNCIL_APP_DB_PASSWORD", "COUNCIL_DASHBOARD_PASSWORD"} == set(
        migrate
    )
    # The job migrates first (an init container), then sets the roles' passwords
    spec = documents[("Job", "council-migrate")]["spec"]["template"]["spec"]
    assert [c["command"][:3] for c in spec["initContainers"]] == [["council", "db", "upgrade"]]
    assert "ALTER ROLE council_dashboard PASSWORD" in spec["containers"][0]["command"][-1]


def test_kubernetes_flower_needs_its_login_and_gets_only_the_broker() -> None:
    from flower.utils import strtobool

    [(_, flower)] = [(w, c) for w, c in _k8s_containers() if w.startswith("flower.yaml ")]
    env = {e["name"]: e for e in flower["env"]}
    assert env["FLOWER_BASIC_AUTH"]["valueFrom"]["secretKeyRef"]["name"] == "council-flower"
    assert not strtobool(env["FLOWER_UNAUTHENTICATED_API"]["value"])
    assert _secret_refs(flower) == {"council-secrets", "council-flower"}
    assert set(env) == {"COUNCIL_BROKER_URL", "FLOWER_BASIC_AUTH", "FLOWER_UNAUTHENTICATED_API"}
    assert not any("secretRef" in source for source in flower.get("envFrom") or [])


def test_kubernetes_web_probes_its_health_under_a_name_it_answers_to() -> None:
    from council.web.security import LOOPBACK_HOSTS

    [(_, web)] = [(w, c) for w, c in _k8s_containers() if w.startswith("web.yaml ")]
    for probe in ("readinessProbe", "livenessProbe"):
        check = web[probe]["httpGet"]
        assert check["path"] == "/health", probe
        hosts = {h["value"] for h in check["httpHeaders"] if h["name"] == "Host"}
        assert hosts and hosts <= LOOPBACK_HOSTS, probe
    allowed = _k8s_documents()[("ConfigMap", "council-config")]["data"]["COUNCIL_ALLOWED_HOSTS"]
    service = _k8s_documents()[("Service", "council-web")]["metadata"]["name"]
    assert service in allowed.split(",")
