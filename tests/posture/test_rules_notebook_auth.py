"""K8S-006 fires on a notebook or dashboard that asks for no credentials (or whose asking cannot
be told) and is reachable from outside; where it listens is no finding by itself."""

from __future__ import annotations

import pytest

import posture.rules.k8s.notebooks  # noqa: F401
from inventory.env_seal import literal_env
from inventory.snapshot import Container, Ingress, Service, Volume, VolumeMount
from posture.rules.registry import CHECKS, run_checks
from tests.posture.builders import env, inputs, pod, tenant

LABELS = {"app": "lab"}
# A Jupyter Docker Stacks image started by its own start script.
STACKS = "quay.io/jupyter/scipy-notebook:2025-01-06"
EVERYWHERE = "--ServerApp.ip=0.0.0.0"


def lab(*args: str, image: str = STACKS, command=("start-notebook.py",), envs=()) -> Container:
    return Container("lab", image, command=command, args=args, ports=(8888,), env=tuple(envs))


def published(c: Container, kind: str = "NodePort", ingress: bool = False, port: int = 8888):
    service = Service("team-a", "lab", kind, LABELS, (port,))
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
    port = c.ports[0] if c.ports else 8888
    (draft,) = run_checks(published(c, kind, ingress, port), ["K8S-006"])
    assert (draft.severity or CHECKS["K8S-006"].severity) == "critical"
    assert draft.evidence["containers"][0]["authentication"] == "off"
    assert draft.evidence["containers"][0]["reasons"] == [reason]
    assert "verdict" not in draft.evidence["containers"][0]


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
    ],
)
def test_authentication_that_cannot_be_told_fires_and_says_unknown(c, why):
    (draft,) = run_checks(published(c), ["K8S-006"])
    assert draft.evidence["containers"][0]["authentication"] == "unknown"
    assert draft.evidence["containers"][0]["verdict"] == "unknown"
    (reason,) = draft.evidence["containers"][0]["reasons"]
    assert reason.startswith("authentication unknown: ") and why in reason
    assert "no token" not in reason and "no token" not in draft.title


# --- what is a notebook, and what reaches it ----------------------------------------------------


@pytest.mark.parametrize(
    "c",
    [
        # Any program may listen on 8888: a port names no server.
        pytest.param(
            Container(
                "api",
                "registry.example.com/payments/api:3.2",
                command=("/app/server",),
                args=("--listen=:8888",),
                ports=(8888,),
            ),  # fmt: skip
            id="an-api-on-8888",
        ),
        pytest.param(
            Container(
                "srv",
                "registry.example.org/ml/serve:3",
                command=("python", "serve.py"),
                args=("--ip=0.0.0.0",),
                ports=(8888,),
            ),  # fmt: skip
            id="a-python-app-on-8888",
        ),
        # A training script on a Jupyter Docker Stacks image runs no notebook.
        pytest.param(
            lab(command=("python", "/home/jovyan/train.py")),
            id="training-script-on-a-jupyter-image",
        ),
        pytest.param(
            lab(command=("sh", "-c", "exec torchrun --nproc-per-node=8 train.py")),
            id="torchrun-in-a-shell-on-a-jupyter-image",
        ),
    ],
)
def test_a_port_or_an_image_alone_is_no_notebook(c):
    assert run_checks(published(c), ["K8S-006"]) == []


def test_a_jupyter_image_running_python_m_jupyter_is_still_a_notebook():
    c = lab(command=("python", "-m", "jupyter", "lab", "--ServerApp.token="))
    (draft,) = run_checks(published(c), ["K8S-006"])
    assert draft.evidence["containers"][0]["authentication"] == "off"


def _metrics_world(target: str, c: Container):
    service = Service("team-a", "lab", "NodePort", LABELS, (9090,), targets=(target,))
    p = pod("team-a", "lab-0", containers=(c,), labels=LABELS)
    return inputs(pods=(p,), tenants=(tenant("a", namespaces=("team-a",)),), services=(service,))


@pytest.mark.parametrize(
    ("target", "args", "fires"),
    [
        pytest.param("9090", (), False, id="numbered-metrics-port"),
        pytest.param("metrics", (), False, id="named-metrics-port"),
        # The same Service, with the notebook told to listen on that port, reaches it.
        pytest.param("9090", ("--ServerApp.port=9090",), True, id="the-notebooks-own-port"),
        pytest.param("metrics", ("--port=9090",), True, id="named-and-the-notebooks-own"),
    ],
)
def test_a_service_must_reach_the_notebooks_own_port(target, args, fires):
    c = Container(
        "lab", STACKS, command=("start-notebook.py",), args=("--ServerApp.token=", *args),
        ports=(8888, 9090), named_ports={"notebook": 8888, "metrics": 9090},
    )  # fmt: skip
    assert bool(run_checks(_metrics_world(target, c), ["K8S-006"])) is fires


def test_an_ingress_must_route_to_the_notebooks_own_port():
    service = Service(
        "team-a", "lab", "ClusterIP", LABELS, (8888, 9090), targets=("8888", "9090"),
        port_map=(("http", 80, 8888), ("metrics", 9090, 9090)),
    )  # fmt: skip
    c = lab("--ServerApp.token=")
    p = pod("team-a", "lab-0", containers=(c,), labels=LABELS)

    def world(port: str):
        route = Ingress(
            "team-a", "lab", hosts=("lab.example.org",), services=("lab",),
            backend_ports=(f"lab:{port}",),
        )  # fmt: skip
        return inputs(
            pods=(p,), tenants=(tenant("a", namespaces=("team-a",)),), services=(service,),
            ingresses=(route,),
        )  # fmt: skip

    assert run_checks(world("metrics"), ["K8S-006"]) == []
    (draft,) = run_checks(world("http"), ["K8S-006"])
    assert draft.evidence["containers"][0]["ingresses"][0]["ports"] == [8888]


# --- credentials the pod spec does not show ---------------------------------------------------


@pytest.mark.parametrize("source", ["secretRef:nb-token", "configMapRef:nb-settings"])
def test_a_token_variable_envfrom_may_set_is_never_not_set(source):
    c = Container(
        "lab", STACKS, command=("sh", "-c", "exec jupyter lab --ServerApp.token=$JUPYTER_TOKEN"),
        ports=(8888,), env_from=(source,),
    )  # fmt: skip
    assert run_checks(published(c), ["K8S-006"]) == []


def test_an_envfrom_prefix_that_cannot_set_the_variable_leaves_it_unset():
    c = Container(
        "lab", STACKS, command=("sh", "-c", "exec jupyter lab --ServerApp.token=$JUPYTER_TOKEN"),
        ports=(8888,), env_from=("secretRef:nb-token:APP_",),
    )  # fmt: skip
    (draft,) = run_checks(published(c), ["K8S-006"])
    assert (
        "$JUPYTER_TOKEN is not set in the pod spec" in draft.evidence["containers"][0]["reasons"][0]
    )


RAY_HEAD = ("ray", "start", "--head", "--dashboard-host=0.0.0.0", "--block")


@pytest.mark.parametrize(
    ("envs", "state"),
    [
        pytest.param((), "off", id="no-auth-mode"),
        pytest.param((env("RAY_AUTH_MODE", "disabled"),), "off", id="disabled"),
        pytest.param((env("RAY_AUTH_MODE", "token"),), None, id="token-mode"),
        pytest.param((env("RAY_AUTH_MODE", None, "secretKeyRef"),), "unknown", id="from-a-secret"),
    ],
)
def test_ray_token_authentication_guards_the_dashboard(envs, state):
    c = Container("ray", "rayproject/ray:2.52.0", command=RAY_HEAD, ports=(8265,), env=envs)
    drafts = run_checks(published(c, port=8265), ["K8S-006"])
    assert [d.evidence["containers"][0]["authentication"] for d in drafts] == (
        [state] if state else []
    )


def test_ray_auth_mode_is_kept_as_the_sync_stores_it():
    var = literal_env("RAY_AUTH_MODE", "token")
    assert var.value == "token"
    c = Container("ray", "rayproject/ray:2.52.0", command=RAY_HEAD, ports=(8265,), env=(var,))
    assert run_checks(published(c, port=8265), ["K8S-006"]) == []


LSIO = "lscr.io/linuxserver/code-server:4.96.2"


@pytest.mark.parametrize(
    ("envs", "env_from", "state"),
    [
        pytest.param((env("PUID", "1000"),), (), "off", id="no-password"),
        pytest.param((env("PASSWORD", "<sealed>"),), (), None, id="password"),
        pytest.param((env("HASHED_PASSWORD", None, "secretKeyRef"),), (), None, id="hashed"),
        pytest.param((env("FILE__PASSWORD", "/run/secrets/p"),), (), None, id="password-file"),
        pytest.param((), ("secretRef:cs",), "unknown", id="envfrom-may-set-it"),
    ],
)
def test_linuxserver_code_server_without_a_password_has_no_login(envs, env_from, state):
    c = Container("cs", LSIO, ports=(8443,), env=envs, env_from=env_from)
    drafts = run_checks(published(c, port=8443), ["K8S-006"])
    assert [d.evidence["containers"][0]["authentication"] for d in drafts] == (
        [state] if state else []
    )
    if state == "off":
        assert (
            "without PASSWORD or HASHED_PASSWORD"
            in drafts[0].evidence["containers"][0]["reasons"][0]
        )


@pytest.mark.parametrize(
    ("envs", "args", "mount"),
    [
        pytest.param(
            (literal_env("JUPYTER_CONFIG_DIR", "/srv/x"),), (), "/srv/x", id="jupyter-config-dir"
        ),
        pytest.param((), ("--config=/opt/nbconf/lab.py",), "/opt/nbconf", id="config-option"),
        pytest.param(
            (env("JUPYTER_CONFIG_DIR", None, "configMapKeyRef"),),
            (),
            "/anywhere",
            id="config-dir-not-read",
        ),  # fmt: skip
    ],
)
def test_jupyter_configuration_at_a_path_the_pod_names_is_unknown(envs, args, mount):
    c = Container(
        "lab", STACKS, command=("start-notebook.py",), args=args, ports=(8888,), env=envs,
        volume_mounts=(VolumeMount("cfg", mount),),
    )  # fmt: skip
    p = pod("team-a", "lab-0", containers=(c,), labels=LABELS,
            volumes=(Volume("cfg", kind="configMap"),))  # fmt: skip
    world = inputs(
        pods=(p,), tenants=(tenant("a", namespaces=("team-a",)),),
        services=(Service("team-a", "lab", "NodePort", LABELS, (8888,)),),
    )  # fmt: skip
    (draft,) = run_checks(world, ["K8S-006"])
    assert draft.evidence["containers"][0]["authentication"] == "unknown"
    assert draft.evidence["containers"][0]["unread_configuration"] == [
        f"configMap volume cfg at {mount}"
    ]


# Kubeflow's documented command line for a custom image: no token, no password, its gateway
# authenticates.
KUBEFLOW_ARGS = (
    "lab", "--ip=0.0.0.0", "--no-browser", "--port=8888", "--ServerApp.token=''",
    "--ServerApp.password=''", "--ServerApp.base_url=$(NB_PREFIX)",
)  # fmt: skip


@pytest.mark.parametrize(("kind", "fires"), [("ClusterIP", False), ("NodePort", True)])
def test_a_kubeflow_custom_image_behind_its_gateway_is_quiet(kind, fires):
    c = Container(
        "nb", "registry.example.com/ml/my-notebook:1.0", command=("jupyter",), args=KUBEFLOW_ARGS,
        ports=(8888,), env=(env("NB_PREFIX", "/notebook/team-a/nb"),),
    )  # fmt: skip
    # The gateway's policies were read to authenticate (inventory/sources/istio_auth.py).
    route = Ingress("team-a", "notebook-team-a-nb", hosts=("*",), services=("lab",),
                    kind="VirtualService", auth="AuthorizationPolicy istio-system/oauth2-proxy: "
                    "CUSTOM authorization by oauth2-proxy")  # fmt: skip
    p = pod("team-a", "lab-0", containers=(c,), labels=LABELS)
    world = inputs(
        pods=(p,), tenants=(tenant("a", namespaces=("team-a",)),),
        services=(Service("team-a", "lab", kind, LABELS, (8888,)),), ingresses=(route,),
    )  # fmt: skip
    drafts = run_checks(world, ["K8S-006"])
    assert bool(drafts) is fires
    if fires:  # the NodePort skips the gateway; the VirtualService is not named
        assert drafts[0].evidence["containers"][0]["ingresses"] == []
        assert drafts[0].evidence["containers"][0]["authentication"] == "off"
