"""docker-compose.yml and deploy/gpuposture.yaml cannot run here; what can be checked is: they
parse, every command they run exists in our code, every variable they set is one our settings
read, secrets come from files with no default passwords, and the Kubernetes workloads are
locked down (non-root, read-only root filesystem, no capabilities, limits, probes)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import yaml
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
MANIFESTS = list(yaml.safe_load_all((ROOT / "deploy" / "gpuposture.yaml").read_text()))
APP_SERVICES = ("web", "worker", "beat", "migrate")
# Variables the official images read themselves, not our settings.
IMAGE_VARIABLES = {"POSTGRES_DB", "POSTGRES_USER", "POSTGRES_PASSWORD_FILE"}


def settings_variables() -> set[str]:
    """Every environment variable the settings (and the Celery app, and the metrics) read."""
    names: set[str] = set()
    for path in [
        *(ROOT / "gpuposture" / "settings").glob("*.py"),
        ROOT / "gpuposture" / "celery.py",
        ROOT / "gpuposture" / "base" / "metrics.py",
    ]:
        text = path.read_text()
        names |= set(re.findall(r'env_\w+\(\s*"([A-Z][A-Z0-9_]+)"', text))
        names |= set(re.findall(r'environ(?:\.get)?[\[(]\s*"([A-Z][A-Z0-9_]+)"', text))
    return names


def readable(name: str, known: set[str]) -> bool:
    """NAME is read, or NAME_FILE stands for a NAME that is (every env helper takes _FILE)."""
    return name in known or (name.endswith("_FILE") and name[: -len("_FILE")] in known)


# --- docker compose ----------------------------------------------------------------------------


def test_compose_runs_the_five_services_with_health_checks():
    services = COMPOSE["services"]
    assert {"web", "worker", "beat", "postgres", "redis"} <= set(services)
    for name in ("web", "worker", "beat", "postgres", "redis"):
        assert services[name].get("healthcheck", {}).get("test"), name
        assert services[name].get("restart") == "unless-stopped", name
    app = services["web"]
    assert app["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "pgdata" in COMPOSE["volumes"] and "uploads" in COMPOSE["volumes"]


def test_compose_commands_exist_in_our_code():
    commands = {name: COMPOSE["services"][name]["command"] for name in APP_SERVICES}
    assert commands["web"][:2] == ["gunicorn", "gpuposture.wsgi"]
    assert hasattr(importlib.import_module("gpuposture.wsgi"), "application")
    for name in ("worker", "beat"):
        assert commands[name][:3] == ["celery", "-A", "gpuposture"]
    from gpuposture.celery import app

    assert app.main == "gpuposture"
    scheduler = commands["beat"][commands["beat"].index("--scheduler") + 1]
    module, _, attribute = scheduler.partition(":")
    assert hasattr(importlib.import_module(module), attribute)
    assert commands["migrate"][:3] == ["python", "manage.py", "migrate"]
    assert "migrate" in get_commands()


def test_compose_sets_only_variables_our_settings_read():
    known = settings_variables()
    for name, service in COMPOSE["services"].items():
        for variable in service.get("environment", {}):
            if variable in IMAGE_VARIABLES:
                continue
            assert readable(variable, known), f"{name} sets {variable}, which nothing reads"


def test_compose_takes_secrets_from_files_and_has_no_default_password():
    text = (ROOT / "docker-compose.yml").read_text()
    assert "POSTGRES_PASSWORD:" not in text  # only POSTGRES_PASSWORD_FILE
    for name, service in COMPOSE["services"].items():
        for variable in service.get("environment", {}):
            secretish = re.search(r"PASSWORD|SECRET|TOKEN|KEY", variable)
            assert not secretish or variable.endswith("_FILE"), f"{name}: {variable} in clear"
    secrets = COMPOSE["secrets"]
    assert all(set(secret) == {"file"} for secret in secrets.values())
    web = COMPOSE["services"]["web"]["environment"]
    assert "SECRET_KEY" not in web and web["SECRET_KEY_FILE"].startswith("/run/secrets/")
    assert web["ALLOWED_HOSTS"].startswith("${GPUPOSTURE_HOSTS:?")  # no default: must be set


# --- Kubernetes --------------------------------------------------------------------------------


def workloads() -> list[dict]:
    return [m for m in MANIFESTS if m["kind"] in ("Deployment", "Job")]


def test_kubernetes_has_web_worker_beat_and_network_policies():
    names = {m["metadata"]["name"] for m in workloads()}
    assert {"gpuposture-web", "gpuposture-worker", "gpuposture-beat"} <= names
    policies = [m for m in MANIFESTS if m["kind"] == "NetworkPolicy"]
    deny = next(p for p in policies if p["metadata"]["name"] == "default-deny")
    assert deny["spec"]["podSelector"] == {} and set(deny["spec"]["policyTypes"]) == {
        "Ingress",
        "Egress",
    }


@pytest.mark.parametrize("workload", workloads(), ids=lambda m: m["metadata"]["name"])
def test_every_container_is_locked_down(workload):
    pod = workload["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    for container in pod["containers"]:
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"]["drop"] == ["ALL"]
        assert {"cpu", "memory"} <= set(container["resources"]["requests"])
        assert {"cpu", "memory"} <= set(container["resources"]["limits"])
        if workload["kind"] == "Deployment":
            assert container["livenessProbe"] and container["readinessProbe"]


def test_only_the_worker_gets_a_kubernetes_token_and_it_is_the_reader():
    for workload in workloads():
        pod = workload["spec"]["template"]["spec"]
        if workload["metadata"]["name"] == "gpuposture-worker":
            assert pod["serviceAccountName"] == "gpuposture-reader"
        else:
            assert pod["automountServiceAccountToken"] is False


def test_web_probes_are_our_health_endpoints():
    web = next(m for m in workloads() if m["metadata"]["name"] == "gpuposture-web")
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz?require=database"


def test_the_config_map_sets_only_variables_our_settings_read():
    known = settings_variables()
    config = next(m for m in MANIFESTS if m["kind"] == "ConfigMap")
    for variable in config["data"]:
        assert readable(variable, known), variable


def test_every_checkov_skip_says_why():
    for workload in workloads():
        for key, value in workload["metadata"].get("annotations", {}).items():
            if key.startswith("checkov.io/skip"):
                check, _, reason = value.partition("=")
                assert re.fullmatch(r"CKV2?_K8S_\d+", check) and len(reason) > 20, value


def test_the_web_tier_serves_requests_side_by_side():
    """gunicorn reads ./gunicorn.conf.py in the image's working directory: threaded workers,
    so long exports cannot take every worker from the health check (bench/export_scale.py)."""
    from gunicorn.config import Config

    config = Config()
    namespace: dict = {}
    exec((ROOT / "gunicorn.conf.py").read_text(), namespace)  # noqa: S102 - our own file
    for name in ("worker_class", "threads", "timeout"):
        config.set(name, namespace[name])
    assert config.worker_class_str == "gthread" and config.threads >= 4
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "WORKDIR /app" in dockerfile and "COPY . ." in dockerfile
    assert (
        not (ROOT / ".dockerignore").exists()
        or "gunicorn.conf.py" not in (ROOT / ".dockerignore").read_text()
    )
