"""K8S-006 fires on a notebook or dashboard that asks for no credentials (or whose asking cannot
be told) and is reachable from outside; where it listens is no finding by itself."""

from __future__ import annotations

import pytest

import posture.rules.k8s.notebooks  # noqa: F401
from inventory.snapshot import Container, Ingress, Service
from posture.rules.registry import CHECKS, run_checks
from tests.posture.builders import env, inputs, pod, tenant

LABELS = {"app": "lab"}
# A Jupyter Docker Stacks image started by its own start script.
STACKS = "quay.io/jupyter/scipy-notebook:2025-01-06"
EVERYWHERE = "--ServerApp.ip=0.0.0.0"


def lab(*args: str, image: str = STACKS, command=("start-notebook.py",), envs=()) -> Container:
    return Container("lab", image, command=command, args=args, ports=(8888,), env=tuple(envs))


def published(c: Container, kind: str = "NodePort", ingress: bool = False):
    service = Service("team-a", "lab", kind, LABELS, (8888,))
    routes = (Ingress("team-a", "lab", hosts=("lab.example.org",), services=("lab",)),)
    p = pod("team-a", "lab-0", containers=(c,), labels=LABELS)
    return inputs(
        pods=(p,),
        tenants=(tenant("a", namespaces=("team-a",)),),
        services=(service,),
        ingresses=routes if ingress else (),
    )


@pytest.mark.parametrize(
    "c",
    [
        pytest.param(lab(EVERYWHERE), id="default-token-on-all-addresses"),
        # jupyter_server reads an empty JUPYTER_TOKEN as unset and generates a token.
        pytest.param(lab(EVERYWHERE, envs=(env("JUPYTER_TOKEN", ""),)), id="empty-env-token"),
        pytest.param(lab(EVERYWHERE, envs=(env("JUPYTER_TOKEN", "<sealed>"),)), id="env-token"),
        pytest.param(lab(EVERYWHERE, "--IdentityProvider.token=<set>"), id="token-option"),
        pytest.param(
            lab(EVERYWHERE, "--IdentityProvider.token=", "--ServerApp.password=sha1:aa:bb"),
            id="hashed-password",
        ),
        pytest.param(
            Container("tb", "python:3.12", command=("tensorboard", "--logdir", "/runs")),
            id="dashboard-on-loopback",
        ),
    ],
)
def test_an_authenticated_notebook_on_all_addresses_is_no_finding(c):
    assert run_checks(published(c), ["K8S-006"]) == []


@pytest.mark.parametrize(
    ("c", "kind", "ingress", "reason"),
    [
        pytest.param(
            lab(EVERYWHERE, "--IdentityProvider.token="),
            "NodePort",
            False,
            "no token or password (--IdentityProvider.token empty)",
            id="empty-token-nodeport",
        ),
        pytest.param(
            lab("--ServerApp.token=''", "--ServerApp.password=''"),
            "LoadBalancer",
            False,
            "no token or password (--ServerApp.token empty)",
            id="empty-token-loadbalancer",
        ),
        pytest.param(
            lab("--NotebookApp.token="),
            "ClusterIP",
            True,
            "no token or password (--NotebookApp.token empty)",
            id="empty-token-ingress",
        ),
        pytest.param(
            Container(
                "ray",
                "rayproject/ray:2.40.0",
                command=("ray", "start", "--head", "--dashboard-host=0.0.0.0"),
                ports=(8265,),
            ),  # fmt: skip
            "NodePort",
            False,
            "no authentication (Ray dashboard has none of its own)",
            id="ray-dashboard",
        ),
    ],
)
def test_no_credentials_and_reachable_from_outside_is_critical(c, kind, ingress, reason):
    (draft,) = run_checks(published(c, kind, ingress), ["K8S-006"])
    assert (draft.severity or CHECKS["K8S-006"].severity) == "critical"
    assert draft.evidence["authentication"] == "off"
    assert draft.evidence["reasons"] == [reason]
    assert "verdict" not in draft.evidence


def test_no_credentials_but_cluster_internal_only_is_no_finding():
    assert run_checks(published(lab("--IdentityProvider.token="), "ClusterIP"), ["K8S-006"]) == []


@pytest.mark.parametrize(
    ("c", "why"),
    [
        pytest.param(
            lab("--port=8888", command=("/opt/lab/serve.sh",)),
            "the image is Jupyter's but runs",
            id="jupyter-image-own-script",
        ),
        pytest.param(
            Container(
                "srv",
                "registry.example.org/ml/serve:3",
                command=("python", "serve.py"),
                args=("--ip=0.0.0.0",),
                ports=(8888,),
            ),  # fmt: skip
            "only its port (8888) says Jupyter",
            id="known-by-port-only",
        ),
    ],
)
def test_authentication_that_cannot_be_told_fires_and_says_unknown(c, why):
    (draft,) = run_checks(published(c), ["K8S-006"])
    assert draft.evidence["authentication"] == "unknown"
    assert draft.evidence["verdict"] == "unknown"
    (reason,) = draft.evidence["reasons"]
    assert reason.startswith("authentication unknown: ") and why in reason
    assert "no token" not in reason and "no token" not in draft.title
