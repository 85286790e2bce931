"""deploy/ is secure by default (docs/architecture.md §11): every manifest validates
strictly against the Kubernetes schema; every pod and Council container runs as a
non-root user with no privilege escalation, no capabilities, a read-only root
filesystem and limits; a NetworkPolicy denies by default; only the runs workers
hold provider keys, in Kubernetes and in compose."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.test_deploy import DEPLOY, _compose, _manifests, _pod_containers
from tests.unit.test_deploy_secrets import _environment, _secret_refs

PROVIDER_KEYS = {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZAI_API_KEY", "OPENROUTER_API_KEY"}
KUBERNETES_VERSION = "1.30.0"


def _pods() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{path.name} {document['metadata']['name']}", document["spec"]["template"]["spec"])
        for path, document in _manifests()
        if document.get("kind") in ("Deployment", "Job")
    ]


@pytest.mark.parametrize("path", sorted((DEPLOY / "k8s").glob("*.yaml")), ids=lambda p: p.name)
def test_every_manifest_validates_strictly(path: Any) -> None:
    import kubernetes_validate
    import yaml

    if path.name == "kustomization.yaml":
        pytest.skip("kustomize's own file has no Kubernetes schema")
    for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        if document:
            # Raises ValidationError (a field the schema does not know, a wrong type, ...)
            kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_every_pod_runs_unprivileged_with_limits() -> None:
    pods = _pods()
    assert len(pods) >= 6
    problems = []
    for where, pod in pods:
        context = pod.get("securityContext") or {}
        if not (context.get("runAsNonRoot") and int(context.get("runAsUser", 0)) > 0):
            problems.append(f"{where}: pod may run as root")
        if (context.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
            problems.append(f"{where}: no RuntimeDefault seccomp profile")
        if pod.get("automountServiceAccountToken") is not False:
            problems.append(f"{where}: mounts a service-account token")
        for container in _pod_containers(pod):
            name = f"{where}/{container['name']}"
            own = container.get("securityContext") or {}
            if own.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{name}: privilege escalation allowed")
            if own.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{name}: writable root filesystem")
            if "ALL" not in ((own.get("capabilities") or {}).get("drop") or []):
                problems.append(f"{name}: capabilities not dropped")
            limits = (container.get("resources") or {}).get("limits") or {}
            if not {"cpu", "memory"} <= set(limits):
                problems.append(f"{name}: limits {sorted(limits)}")
    assert problems == []


def test_a_network_policy_denies_by_default_and_only_runs_workers_reach_https() -> None:
    policies = {d["metadata"]["name"]: d["spec"] for _, d in _manifests() if d.get("kind") == "NetworkPolicy"}
    default = [
        spec
        for spec in policies.values()
        if spec["podSelector"] == {}
        and set(spec["policyTypes"]) == {"Ingress", "Egress"}
        and not spec.get("ingress")
        and not spec.get("egress")
    ]
    assert default, "no default-deny policy"
    https = [
        spec["podSelector"]
        for spec in policies.values()
        for rule in spec.get("egress") or []
        if any(port.get("port") == 443 for port in rule.get("ports") or [])
    ]
    assert https == [{"matchLabels": {"app.kubernetes.io/component": "worker-runs"}}]


def test_only_the_runs_workers_hold_provider_keys() -> None:
    keys = {d["metadata"]["name"]: d for _, d in _manifests() if d.get("kind") == "Secret"}
    holding = {name for name, d in keys.items() if PROVIDER_KEYS & set(d.get("stringData") or {})}
    assert holding == {"council-provider-keys"}
    holders = {
        where
        for where, pod in _pods()
        for container in _pod_containers(pod)
        if "council-provider-keys" in _secret_refs(container)
    }
    assert holders == {"workers.yaml council-worker-runs"}
    services = _compose()["services"]
    compose_holders = {name for name, s in services.items() if PROVIDER_KEYS & set(_environment(s))}
    assert compose_holders == {"worker-runs"}


def test_every_council_container_in_compose_is_unprivileged_with_limits() -> None:
    problems = []
    for name, service in _compose()["services"].items():
        if not str(service.get("image", "")).startswith("council"):
            continue
        user = str(service.get("user", "0")).split(":", 1)[0]
        if not user.isdigit() or int(user) == 0:
            problems.append(f"{name}: user {user}")
        if service.get("read_only") is not True:
            problems.append(f"{name}: writable root filesystem")
        if "ALL" not in (service.get("cap_drop") or []):
            problems.append(f"{name}: capabilities not dropped")
        if "no-new-privileges:true" not in (service.get("security_opt") or []):
            problems.append(f"{name}: new privileges allowed")
        limits = ((service.get("deploy") or {}).get("resources") or {}).get("limits") or {}
        if not {"cpus", "memory"} <= set(limits):
            problems.append(f"{name}: limits {sorted(limits)}")
    assert problems == []
    # The workers' metrics port is off loopback: they need the read token for it.
    for name in ("worker-runs", "worker-commit", "worker-maintenance"):
        environment = _environment(_compose()["services"][name])
        assert environment["COUNCIL_METRICS_ADDR"] == "0.0.0.0"
        assert environment["COUNCIL_API_READ_TOKEN"].startswith("${COUNCIL_API_READ_TOKEN:?")
