"""K8S-006 (exposed notebooks) and K8S-007 (egress policies) over hand-built read models, then
the demo world."""

from __future__ import annotations

import pytest

import posture.rules  # noqa: F401
import posture.rules.k8s.notebooks  # noqa: F401
from inventory.env_seal import literal_env
from inventory.snapshot import (
    Container,
    Ingress,
    NetworkPolicy,
    Pod,
    Service,
    Volume,
    VolumeMount,
    Workload,
)
from posture.inputs import PostureInputs
from posture.rules.k8s.notebook_servers import OFF, ON, authentication
from posture.rules.k8s.notebooks import is_notebook
from posture.rules.registry import run_checks
from tests.posture.builders import env, inputs, pod, tenant
from tests.posture.test_rules_rbac import demo_worlds

ALPHA = tenant("alpha")
APP = {"app": "nb"}
NOTEBOOK = "quay.io/jupyter/base-notebook:2024-10-02"
OPEN_ARGS = ("start-notebook.py", "--ServerApp.token=", "--ServerApp.password=")


def nb(image: str = NOTEBOOK, args=OPEN_ARGS, **fields) -> Container:
    return Container(name="nb", image=image, args=tuple(args), **fields)


def node_port(
    selector=None, namespace="alpha", name="nb", kind="NodePort", ports=(8888,)
) -> Service:
    return Service(namespace, name, kind, APP if selector is None else selector, ports)


# Every port a dashboard below listens on by default (a Service reaches a server on its own
# port only).
DASHBOARD_PORTS = (8888, 6006, 5000, 8265, 8080, 8501, 7860)


def notebook_world(c: Container, services=(), ingresses=(), namespace="alpha", labels=None):
    p = pod(namespace, "nb-0", containers=(c,), labels=APP if labels is None else labels)
    return inputs(pods=(p,), tenants=(ALPHA,), services=tuple(services), ingresses=tuple(ingresses))


# --- K8S-006 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("c", "notebook"),
    [
        (nb(args=()), True),
        (
            Container(
                "c",
                "docker.io/tensorflow/tensorflow:latest",
                command=("tensorboard",),
                ports=(6006,),
            ),
            True,
        ),
        (Container("c", "rayproject/ray:2.9.0", ports=(8265,)), True),
        (Container("c", "ghcr.io/mlflow/mlflow:v2.17.0"), True),
        (Container("c", "python:3.12", command=("sh", "-c", "jupyter lab --ip=0.0.0.0")), True),
        (Container("c", "python:3.12", args=("--NotebookApp.token=''",)), True),
        (Container("c", "nginx:1.27", ports=(8080,)), False),
        # JupyterHub's hub and proxy (zero-to-jupyterhub): the hub authenticates, no notebook.
        (
            Container(
                "hub", "quay.io/jupyterhub/k8s-hub:4.0.0", command=("jupyterhub", "--ip=0.0.0.0")
            ),
            False,
        ),
        (
            Container(
                "chp",
                "quay.io/jupyterhub/configurable-http-proxy:4.6.2",
                command=("configurable-http-proxy", "--ip=", "--port=8000"),
            ),
            False,
        ),
        (Container("nb", "python:3.12", command=("jupyterhub-singleuser",)), True),
        (Container("c", "registry.example.com/train:1", args=("--host=0.0.0.0",)), False),
    ],
)
def test_is_notebook(c, notebook):
    assert is_notebook(c) is notebook


@pytest.mark.parametrize(
    ("args", "envs", "state", "why"),
    [
        (OPEN_ARGS, (), OFF, "no token or password (--ServerApp.token empty)"),
        (("--NotebookApp.token=''",), (), OFF, "no token or password (--NotebookApp.token empty)"),
        (
            ("--IdentityProvider.token", ""),
            (),
            OFF,
            "no token or password (--IdentityProvider.token empty)",
        ),
        (("--NotebookApp.token=", "--NotebookApp.password=sha1:ab12:cd34"), (), ON, "password"),
        (
            ("--ServerApp.token=", "--PasswordIdentityProvider.hashed_password=argon2:x"),
            (),
            ON,
            "password",
        ),
        # Jupyter reads an empty JUPYTER_TOKEN as unset and generates a token...
        ((), (env("JUPYTER_TOKEN", ""),), ON, "random token"),
        # ...but an option given the empty variable is an empty token.
        (
            ("--IdentityProvider.token=$(JUPYTER_TOKEN)",),
            (env("JUPYTER_TOKEN", ""),),
            OFF,
            "no token or password (--IdentityProvider.token empty: JUPYTER_TOKEN is empty)",
        ),
        (("--ServerApp.token=$(JUPYTER_TOKEN)",), (env("JUPYTER_TOKEN", "<sealed>"),), ON, "token"),
        (("--ServerApp.token=$(JUPYTER_TOKEN)",), (), ON, "token"),  # left as written: a literal
        ((), (env("JUPYTER_TOKEN", None, "secretKeyRef:nb/token"),), ON, "JUPYTER_TOKEN"),
        ((), (env("JUPYTER_TOKEN", "s3cret-token"),), ON, "JUPYTER_TOKEN"),
        (("--ServerApp.token=abc",), (), ON, "token set"),
        # Where it listens says nothing of how it authenticates.
        (("--ip=0.0.0.0",), (), ON, "random token"),
        (("--ServerApp.ip", "0.0.0.0"), (), ON, "random token"),  # noqa: S104
        (("--ip=127.0.0.1",), (), ON, "random token"),
        (("--ServerApp.token=", "--ServerApp.ip=0.0.0.0"), (), OFF, "--ServerApp.token empty"),
    ],
)
def test_jupyter_authentication(args, envs, state, why):
    found = authentication(nb(args=args, env=envs))
    assert found.state == state and why in found.why


def test_authentication_reads_a_shell_command_line():
    c = Container(
        "c", "python:3.12", command=("sh", "-c", "jupyter lab --ServerApp.token='' --ip 0.0.0.0")
    )
    assert authentication(c).state == OFF


@pytest.mark.parametrize(
    ("c", "services", "ingresses", "fires"),
    [
        pytest.param(nb(), [node_port()], [], True, id="nodeport"),
        pytest.param(nb(), [node_port(kind="LoadBalancer")], [], True, id="loadbalancer"),
        pytest.param(nb(), [node_port(kind="ClusterIP")], [], False, id="clusterip-only"),
        pytest.param(
            nb(),
            [node_port(kind="ClusterIP")],
            [Ingress("alpha", "web", hosts=("nb.example.com",), services=("nb",))],
            True,
            id="ingress",
        ),
        pytest.param(
            nb(),
            [node_port(kind="ClusterIP")],
            [Ingress("alpha", "web", services=("other",))],
            False,
            id="ingress-elsewhere",
        ),
        # The remedy the check gives: an Ingress that authenticates (OAuth2 proxy) in front.
        pytest.param(
            nb(),
            [node_port(kind="ClusterIP")],
            [
                Ingress(
                    "alpha", "web", services=("nb",), auth="nginx.ingress.kubernetes.io/auth-url=x"
                )
            ],
            False,
            id="ingress-with-auth",
        ),
        pytest.param(
            nb(),
            [node_port(kind="ClusterIP")],
            [Ingress("beta", "web", services=("nb",))],
            False,
            id="ingress-other-ns",
        ),
        pytest.param(nb(), [node_port(namespace="beta")], [], False, id="service-other-ns"),
        pytest.param(
            nb(), [node_port(selector={"app": "other"})], [], False, id="selector-mismatch"
        ),
        pytest.param(
            nb(),
            [node_port(selector={**APP, "tier": "web"})],
            [],
            False,
            id="selector-partly-matching",
        ),
        pytest.param(nb(), [node_port(selector={})], [], False, id="no-selector"),
        pytest.param(nb(args=("start-notebook.py",)), [node_port()], [], False, id="default-token"),
        # A native sidecar (an init container that keeps running) serves like an app container;
        # a plain init container has exited before anything can reach it.
        pytest.param(nb(init=True, sidecar=True), [node_port()], [], True, id="native-sidecar"),
        pytest.param(nb(init=True), [node_port()], [], False, id="init-container"),
        # Jupyter's own token still guards it: every pod a Service reaches listens on all addresses.
        pytest.param(nb(args=("--ip=0.0.0.0",)), [node_port()], [], False, id="all-addresses"),
        pytest.param(
            Container("nginx", "nginx:1.27", args=("--host=0.0.0.0",)),
            [node_port()],
            [],
            False,
            id="not-a-notebook",
        ),
        pytest.param(
            Container(
                "tb",
                "tensorflow/tensorflow:2.17.0",
                args=("tensorboard", "--bind_all"),
                ports=(6006,),
            ),
            [node_port(ports=(6006,))],
            [],
            True,
            id="tensorboard",
        ),
        pytest.param(
            Container(
                "ray", "rayproject/ray:2.9.0", args=("--dashboard-host=0.0.0.0",), ports=(8265,)
            ),
            [node_port()],
            [],
            True,
            id="ray-dashboard",
        ),
    ],
)
def test_k8s006(c, services, ingresses, fires):
    drafts = run_checks(notebook_world(c, services, ingresses), only=["K8S-006"])
    assert bool(drafts) is fires


def proxied(nb_args=OPEN_ARGS, target="proxy", **service) -> tuple[Pod, Service]:
    """A notebook pod with an OAuth proxy sidecar in front of it (OpenShift AI, oauth2-proxy)."""
    notebook = nb(args=nb_args, ports=(8888,), named_ports={"notebook-port": 8888})
    proxy = Container(
        "oauth-proxy", "quay.io/oauth2-proxy/oauth2-proxy:v7.6.0", ports=(4180,),
        named_ports={"proxy": 4180},
    )  # fmt: skip
    p = pod("alpha", "nb-0", containers=(notebook, proxy), labels=APP)
    return p, Service("alpha", "nb", "LoadBalancer", APP, (4180,), targets=(target,), **service)


@pytest.mark.parametrize(
    ("nb_args", "target", "fires"),
    [
        pytest.param(OPEN_ARGS, "proxy", False, id="named-target-is-the-proxy"),
        pytest.param(OPEN_ARGS, "4180", False, id="numeric-target-is-the-proxy"),
        pytest.param(OPEN_ARGS, "notebook-port", True, id="named-target-is-the-notebook"),
        pytest.param(OPEN_ARGS, "8888", True, id="numeric-target-is-the-notebook"),
        # The notebook listens on 8888: a Service for another port of the pod does not reach it.
        pytest.param(OPEN_ARGS, "9999", False, id="another-port-is-not-the-notebooks"),
        pytest.param(
            (*OPEN_ARGS, "--ServerApp.port=9999"), "9999", True, id="the-notebooks-own-port"
        ),
        pytest.param(OPEN_ARGS, "metrics", False, id="unresolved-name-has-no-endpoint"),
        pytest.param(
            (*OPEN_ARGS, "--ServerApp.ip=127.0.0.1"), "8888", False, id="notebook-on-loopback"
        ),
    ],
)
def test_k8s006_a_service_reaches_only_the_container_its_target_port_names(nb_args, target, fires):
    p, service = proxied(nb_args, target)
    world = inputs(pods=(p,), tenants=(ALPHA,), services=(service,))
    assert bool(run_checks(world, ["K8S-006"])) is fires


@pytest.mark.parametrize(
    ("c", "pod_fields", "services", "how"),
    [
        pytest.param(nb(), {"host_network": True}, [], "hostNetwork", id="host-network"),
        pytest.param(nb(host_ports=(8888,)), {}, [], "hostPort 8888", id="host-port"),
        pytest.param(
            nb(),
            {},
            [Service("alpha", "nb", "ClusterIP", APP, (8888,), external_ips=("203.0.113.7",))],
            "ClusterIP Service nb (externalIPs)",
            id="external-ips",
        ),
    ],
)
def test_k8s006_reachable_on_an_address_outside_the_cluster_network(c, pod_fields, services, how):
    p = pod("alpha", "nb-0", containers=(c,), labels=APP, **pod_fields)
    world = inputs(pods=(p,), tenants=(ALPHA,), services=tuple(services))
    (draft,) = run_checks(world, ["K8S-006"])
    assert draft.title.endswith(f"is reachable through {how}")


def test_k8s006_an_internal_load_balancer_is_still_beyond_the_node_and_says_so():
    internal = "service.beta.kubernetes.io/aws-load-balancer-internal=true"
    service = Service(
        "alpha", "nb", "LoadBalancer", APP, (8888,), internal_lb=internal,
        source_ranges=("10.0.0.0/8",),
    )  # fmt: skip
    (draft,) = run_checks(notebook_world(nb(), [service]), ["K8S-006"])
    assert draft.evidence["containers"][0]["services"] == [
        {
            "name": "nb",
            "type": "LoadBalancer",
            "ports": [8888],
            "internal": internal,
            "source_ranges": ["10.0.0.0/8"],
        }
    ]
    assert draft.title.endswith("LoadBalancer Service nb (internal load balancer)")


def test_k8s006_a_route_in_another_namespace_reaches_the_service_it_names():
    # A shared gateway's namespace holds the route; the tenant's ReferenceGrant allows it.
    route = Ingress(
        "gateway-infra", "nb", hosts=("nb.example.com",), kind="HTTPRoute",
        remote_services=("alpha/nb",),
    )  # fmt: skip
    elsewhere = Ingress("gateway-infra", "other", kind="HTTPRoute", remote_services=("beta/nb",))
    world = notebook_world(nb(), [node_port(kind="ClusterIP")], [route, elsewhere])
    (draft,) = run_checks(world, ["K8S-006"])
    assert draft.evidence["containers"][0]["ingresses"] == [
        {
            "name": "nb",
            "kind": "HTTPRoute",
            "namespace": "gateway-infra",
            "hosts": ["nb.example.com"],
            "service": "nb",
            "ports": [8888],
        }
    ]


ALL = "0.0.0.0"  # noqa: S104 (a server's address in a test world)


@pytest.mark.parametrize(
    ("c", "reason"),
    [
        pytest.param(
            Container("cs", "codercom/code-server:4.93.1", args=("--auth", "none")),
            "no authentication (--auth none)",
            id="code-server-auth-none",
        ),
        pytest.param(
            Container("cs", "codercom/code-server:4.93.1", args=("--bind-addr", "0.0.0.0:8080")),
            None,
            id="code-server-password",
        ),
        pytest.param(
            Container(
                "tb",
                "python:3.12",
                command=("tensorboard",),
                args=("--logdir", "/l", "--host", ALL),
            ),
            "no authentication (TensorBoard has none of its own)",
            id="tensorboard-host",
        ),
        pytest.param(
            Container("tb", "python:3.12", command=("tensorboard", "--logdir", "/l")),
            None,
            id="tensorboard-on-loopback-by-default",
        ),
        pytest.param(
            Container("ml", "python:3.12", command=("mlflow", "server", "--host", ALL)),
            "no authentication (MLflow has none of its own)",
            id="mlflow",
        ),
        pytest.param(
            Container(
                "ml",
                "python:3.12",
                command=("mlflow", "server", "--host", ALL, "--app-name", "basic-auth"),
            ),
            None,
            id="mlflow-basic-auth",
        ),
        pytest.param(
            Container("st", "python:3.12", command=("streamlit", "run", "app.py")),
            "no authentication (Streamlit has none of its own)",
            id="streamlit-binds-all-by-default",
        ),
        pytest.param(
            Container(
                "gr",
                "python:3.12",
                command=("python", "app.py"),
                env=(env("GRADIO_SERVER_NAME", ALL),),
            ),
            "no authentication (Gradio has none of its own)",
            id="gradio",
        ),
        pytest.param(
            Container(
                "ray",
                "rayproject/ray:2.9.0",
                command=("/bin/bash", "-lc", "--"),
                args=("ray start --head --dashboard-host=0.0.0.0 --block",),
            ),
            "no authentication (Ray dashboard has none of its own)",
            id="kuberay-head",
        ),
        pytest.param(
            Container("ray", "rayproject/ray:2.9.0", args=("ray start --address=head:6379",)),
            None,
            id="ray-worker",
        ),
    ],
)
def test_k8s006_dashboards_without_authentication(c, reason):
    drafts = run_checks(notebook_world(c, [node_port(ports=DASHBOARD_PORTS)]), ["K8S-006"])
    assert [d.evidence["containers"][0]["reasons"] for d in drafts] == (
        [[reason]] if reason else []
    )


KUBEFLOW = Container(
    "nb",
    "kubeflownotebookswg/jupyter-scipy:v1.8.0",
    ports=(8888,),
    env=(env("NB_PREFIX", "/notebook/alpha/nb"),),
)


@pytest.mark.parametrize(
    ("kind", "fires"), [("ClusterIP", False), ("NodePort", True), ("LoadBalancer", True)]
)
def test_k8s006_kubeflow_notebook_published_around_its_gateway(kind, fires):
    # Kubeflow's images serve with no token: its Istio gateway authenticates. A ClusterIP
    # Service (reached through that gateway) is fine; a NodePort or load balancer skips it.
    drafts = run_checks(notebook_world(KUBEFLOW, [node_port(kind=kind)]), ["K8S-006"])
    assert bool(drafts) is fires
    if fires:
        assert "Kubeflow notebook" in drafts[0].evidence["containers"][0]["reasons"][0]


@pytest.mark.parametrize(
    ("volume", "mount", "args", "verdict"),
    [
        (Volume("cfg", kind="configMap"), VolumeMount("cfg", "/etc/jupyter"), (), "unknown"),
        (
            Volume("cfg", kind="configMap"),
            VolumeMount("cfg", "/home/jovyan/.jupyter/jupyter_server_config.py", sub_path="c.py"),
            (),
            "unknown",
        ),
        (Volume("cfg", kind="configMap"), VolumeMount("cfg", "/etc/jupyter"), OPEN_ARGS, None),
        (Volume("data", kind="configMap"), VolumeMount("data", "/home/jovyan/work"), (), "none"),
    ],
)
def test_k8s006_jupyter_configuration_from_a_configmap_is_unknown(volume, mount, args, verdict):
    c = nb(args=args, volume_mounts=(mount,))
    p = pod("alpha", "nb-0", containers=(c,), labels=APP, volumes=(volume,))
    drafts = run_checks(inputs(pods=(p,), tenants=(ALPHA,), services=(node_port(),)), ["K8S-006"])
    if verdict == "none":
        assert drafts == []
        return
    (draft,) = drafts
    assert draft.evidence["containers"][0].get("verdict") == verdict
    assert draft.evidence["containers"][0]["unread_configuration"] == [
        f"configMap volume cfg at {mount.mount_path}"
    ]


@pytest.mark.parametrize(
    ("value", "stored", "fires"),
    [
        (
            "--ServerApp.token='' --ServerApp.password=''",
            "--ServerApp.token= --ServerApp.password=",
            True,
        ),
        (
            "--ServerApp.token=s3cr3t-abc --ip=0.0.0.0",
            "'--ServerApp.token=<set>' --ip=0.0.0.0",
            False,  # a token, wherever it listens
        ),
        ("--ServerApp.token s3cr3t-abc", "--ServerApp.token '<set>'", False),
        ("--ServerApp.base_url=/nb", "--ServerApp.base_url=/nb", False),
    ],
)
def test_k8s006_reads_the_docker_stacks_notebook_args(value, stored, fires):
    # The Docker Stacks' start script appends NOTEBOOK_ARGS to `jupyter lab`; the sync keeps
    # it with secret values replaced, so the token's emptiness is still known.
    var = literal_env("NOTEBOOK_ARGS", value)
    assert var.value == stored
    world = notebook_world(nb(args=(), env=(var,)), [node_port()])
    assert bool(run_checks(world, ["K8S-006"])) is fires


@pytest.mark.parametrize(
    ("address", "fires"),
    [("0.0.0.0", True), ("127.0.0.1", False)],  # noqa: S104
)
def test_k8s006_gradio_address_from_env_as_the_sync_stores_it(address, fires):
    var = literal_env("GRADIO_SERVER_NAME", address)
    assert var.value == address
    c = Container("gr", "python:3.12", command=("python", "app.py"), env=(var,))
    assert bool(run_checks(notebook_world(c, [node_port()]), ["K8S-006"])) is fires


def test_k8s006_platform_namespace_never_fires():
    assert not run_checks(
        notebook_world(nb(), [node_port(namespace="tools")], namespace="tools"), ["K8S-006"]
    )


def test_k8s006_evidence_names_pod_container_reason_service_and_ingress():
    service = node_port()
    ingress = Ingress("alpha", "web", hosts=("nb.example.com",), services=("nb",))
    (draft,) = run_checks(notebook_world(nb(ports=(8888,)), [service], [ingress]), ["K8S-006"])
    assert (draft.tenants, draft.subject_kind, draft.subject_name, draft.key) == (
        ("alpha",),
        "Pod",
        "nb-0",
        "",
    )
    assert draft.evidence["pods"][0]["pod"] == "alpha/nb-0"
    assert draft.evidence["workload"] == "Pod alpha/nb-0"
    (ev,) = draft.evidence["containers"]
    assert ev["container"] == "nb" and ev["image"] == NOTEBOOK
    assert ev["reasons"] == ["no token or password (--ServerApp.token empty)"]
    assert ev["services"] == [{"name": "nb", "type": "NodePort", "ports": [8888]}]
    assert ev["ingresses"] == [
        {"name": "web", "hosts": ["nb.example.com"], "service": "nb", "ports": [8888]}
    ]
    assert "NodePort Service nb" in draft.title and "Ingress web" in draft.title


# --- K8S-007 ----------------------------------------------------------------------------------

GPU = {"nvidia.com/gpu": 1}


def egress(selector=None, types=("Egress",), namespace="alpha", expressions=(), open_all=False):
    everything = not selector and not expressions
    return NetworkPolicy(
        namespace,
        "np",
        selector or {},
        everything,
        types,
        0,
        1,
        match_expressions=tuple(expressions),
        egress_allows_all=open_all,
    )


def expr(key, operator, *values):
    return {"key": key, "operator": operator, "values": list(values)}


@pytest.mark.parametrize(
    ("pods", "policies", "open_pods"),
    [
        pytest.param([pod("alpha", gpu=GPU)], [], ["alpha/p"], id="no-policy"),
        pytest.param([pod("alpha", gpu=GPU)], [egress()], [], id="egress-all-pods"),
        pytest.param(
            [pod("alpha", gpu=GPU)], [egress(types=("Ingress",))], ["alpha/p"], id="ingress-only"
        ),
        pytest.param(
            [pod("alpha", gpu=GPU)], [egress(types=("Egress", "Ingress"))], [], id="both-types"
        ),
        pytest.param(
            [pod("alpha", gpu=GPU)], [egress(namespace="beta")], ["alpha/p"], id="other-namespace"
        ),
        pytest.param(
            [pod("alpha", gpu=GPU, labels={"app": "gpu"})],
            [egress({"app": "gpu"})],
            [],
            id="selector-matches",
        ),
        pytest.param(
            [pod("alpha", gpu=GPU, labels={"app": "gpu"})],
            [egress({"app": "web"})],
            ["alpha/p"],
            id="selector-misses",
        ),
        pytest.param(
            [pod("alpha", gpu=GPU, labels={"app": "gpu"})],
            [egress(expressions=[expr("app", "In", "gpu", "batch")])],
            [],
            id="match-expressions-match",
        ),
        pytest.param(
            [pod("alpha", gpu=GPU, labels={"app": "gpu"})],
            [egress(expressions=[expr("app", "In", "web")])],
            ["alpha/p"],
            id="match-expressions-miss",
        ),
        pytest.param(
            [pod("alpha", gpu=GPU, labels={"app": "gpu"})],
            [egress({"app": "gpu"}, expressions=[expr("tier", "Exists")])],
            ["alpha/p"],
            id="labels-match-expression-misses",
        ),
        pytest.param(
            [pod("alpha", gpu=GPU, labels={"app": "gpu"})],
            [egress(expressions=[expr("tier", "DoesNotExist"), expr("app", "NotIn", "web")])],
            [],
            id="match-expressions-absent-and-notin",
        ),
        pytest.param(
            [pod("alpha", gpu=GPU)],
            [egress(), egress(open_all=True)],
            ["alpha/p"],
            id="deny-all-undone-by-allow-all",
        ),
        pytest.param(
            [pod("alpha", gpu=GPU, labels={"app": "gpu"})],
            [egress(), egress({"app": "web"}, open_all=True)],
            [],
            id="allow-all-for-other-pods",
        ),
        pytest.param(
            [pod("alpha", "a", gpu=GPU, labels={"app": "gpu"}), pod("alpha", "b", gpu=GPU)],
            [egress({"app": "gpu"})],
            ["alpha/b"],
            id="partly-covered",
        ),
        # NetworkPolicy does not reach a pod on the node's network: a deny-all leaves it open.
        pytest.param(
            [pod("alpha", gpu=GPU, host_network=True)],
            [egress()],
            ["alpha/p"],
            id="host-network-not-restricted",
        ),
        pytest.param([pod("alpha")], [], [], id="cpu-only"),
        pytest.param([pod("alpha", gpu=GPU, phase="Succeeded")], [], [], id="finished"),
        pytest.param([pod("tools", gpu=GPU)], [], [], id="platform-namespace"),
    ],
)
def test_k8s007(pods, policies, open_pods):
    world = inputs(pods=tuple(pods), tenants=(ALPHA,), network_policies=tuple(policies))
    drafts = run_checks(world, only=["K8S-007"])
    if not open_pods:
        assert drafts == []
        return
    (draft,) = drafts
    assert (draft.tenants, draft.subject_kind, draft.subject_name) == (
        ("alpha",),
        "Namespace",
        "alpha",
    )
    assert draft.evidence["gpu_pods_without_egress_policy"] == open_pods
    assert draft.evidence["gpu_pods"] == len(pods)


def cni_policy(namespace="alpha", engine="cilium.io/CiliumNetworkPolicy", name="cnp"):
    return NetworkPolicy(namespace, name, selects_all_pods=False, engine=engine)


@pytest.mark.parametrize(
    ("policies", "unevaluated"),
    [
        ([cni_policy()], ["cilium.io/CiliumNetworkPolicy alpha/cnp"]),
        ([cni_policy("beta")], None),
    ],
)
def test_k8s007_says_unknown_where_a_cni_policy_may_restrict(policies, unevaluated):
    world = inputs(
        pods=(pod("alpha", gpu=GPU),), tenants=(ALPHA,), network_policies=tuple(policies)
    )
    (draft,) = run_checks(world, only=["K8S-007"])
    if unevaluated is None:
        assert draft.evidence["verdict"] == "not restricted"
        assert "unknown" not in draft.title
        return
    assert draft.evidence["verdict"] == "unknown"
    assert draft.evidence["unevaluated_policies"] == unevaluated
    assert "cannot tell whether egress" in draft.title and "does not evaluate" in draft.title
    # Not a confirmed medium: what gpuposture cannot evaluate may restrict it.
    assert draft.severity == "low" and draft.evidence["basis"].startswith("unverified")


def test_k8s007_a_calico_policy_stored_before_its_selector_was_read_is_unknown():
    # A sync from before Calico policies were evaluated kept them by name only.
    stored = cni_policy("", "projectcalico.org/GlobalNetworkPolicy", "gnp")
    world = inputs(pods=(pod("alpha", gpu=GPU),), tenants=(ALPHA,), network_policies=(stored,))
    (draft,) = run_checks(world, only=["K8S-007"])
    assert draft.evidence["verdict"] == "unknown" and draft.severity == "low"
    (entry,) = draft.evidence["calico_not_evaluated"]
    assert entry["policy"] == "projectcalico.org/GlobalNetworkPolicy cluster-wide gnp"


def world_deny(namespace="alpha", selector=None, expressions=(), name="deny-world"):
    return NetworkPolicy(
        namespace,
        name,
        selector or {},
        not selector and not expressions,
        match_expressions=tuple(expressions),
        engine="cilium.io/CiliumNetworkPolicy"
        if namespace
        else "cilium.io/CiliumClusterwideNetworkPolicy",
        egress_denies_world=True,
    )


@pytest.mark.parametrize(
    ("policies", "pod_fields", "fires"),
    [
        pytest.param([world_deny()], {}, False, id="cnp-all-pods"),
        pytest.param(
            [world_deny(selector={"app": "gpu"})],
            {"labels": {"app": "gpu"}},
            False,
            id="cnp-selects",
        ),
        pytest.param(
            [world_deny(selector={"app": "web"})], {"labels": {"app": "gpu"}}, True, id="cnp-misses"
        ),
        pytest.param([world_deny(namespace="beta")], {}, True, id="cnp-other-namespace"),
        pytest.param([world_deny(namespace="")], {}, False, id="ccnp-everywhere"),
        pytest.param(
            [world_deny(namespace="", selector={"io.kubernetes.pod.namespace": "alpha"})],
            {},
            False,
            id="ccnp-this-namespace",
        ),
        pytest.param(
            [world_deny(namespace="", selector={"io.kubernetes.pod.namespace": "beta"})],
            {},
            True,
            id="ccnp-other-namespace",
        ),
        # A hostNetwork pod is not a Cilium endpoint of its own: endpoint policies miss it.
        pytest.param([world_deny()], {"host_network": True}, True, id="host-network"),
        # Deny wins in Cilium, even over a Kubernetes allow-all rule.
        pytest.param([world_deny(), egress(open_all=True)], {}, False, id="deny-beats-k8s-allow"),
    ],
)
def test_k8s007_cilium_world_deny_restricts(policies, pod_fields, fires):
    p = pod("alpha", gpu=GPU, **pod_fields)
    world = inputs(pods=(p,), tenants=(ALPHA,), network_policies=tuple(policies))
    assert bool(run_checks(world, only=["K8S-007"])) is fires


def agent(image):
    return Workload("DaemonSet", "kube-system", "cni-agent", images={"agent": image})


@pytest.mark.parametrize(
    ("workloads", "policies", "cnis"),
    [
        ([agent("quay.io/cilium/cilium:v1.16.3")], [], ["Cilium"]),
        ([agent("docker.io/calico/node:v3.28.1")], [], ["Calico"]),
        (
            [agent("quay.io/openshift-release-dev/ocp-v4.0-art-dev:ovn-kubernetes")],
            [],
            ["OVN-Kubernetes"],
        ),
        # Some of Cilium's own policies were read: its kinds were listed, none is here.
        ([agent("quay.io/cilium/cilium:v1.16.3")], [cni_policy("beta")], None),
        ([agent("registry.example.com/flannel:v0.25")], [], None),
    ],
)
def test_k8s007_says_unknown_where_a_cni_runs_whose_policies_were_not_read(
    workloads, policies, cnis
):
    world = inputs(
        pods=(pod("alpha", gpu=GPU),),
        tenants=(ALPHA,),
        network_policies=tuple(policies),
        workloads=tuple(workloads),
    )
    (draft,) = run_checks(world, only=["K8S-007"])
    if cnis is None:
        assert draft.evidence["verdict"] == "not restricted"
        assert "cni_policies_not_read" not in draft.evidence
        return
    assert draft.evidence["verdict"] == "unknown"
    assert draft.evidence["cni_policies_not_read"] == cnis
    assert f"runs {cnis[0]}, whose own network policies were not read" in draft.title
    # No policy is known to exist: the check's own severity, the title saying it cannot tell.
    assert "cannot tell whether egress" in draft.title and draft.severity != "low"


# --- the demo world ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo() -> dict[str, PostureInputs]:
    return demo_worlds()


def test_demo_orbital_jupyter_behind_nodeport(demo):
    # prod-east's Kubeflow notebook is behind a gateway that authenticates: no finding.
    assert run_checks(demo["prod-east"], ["K8S-006"]) == []
    drafts = {d.subject_name: d for d in run_checks(demo["neo-west"], ["K8S-006"])}
    # Besides orbital's Jupyter: research's Kubeflow notebook on a gateway that authenticates
    # nothing, and orbital's serverless vLLM (tests/demo/test_gateways_and_injectors.py).
    assert set(drafts) == {"jupyter", "nb-mira", "bio-llm"}
    draft = drafts["jupyter"]
    assert (draft.tenants, draft.subject_namespace, draft.key) == (
        ("orbital",),
        "cust-orbital",
        "",
    )
    assert draft.evidence["containers"][0]["services"] == [
        {"name": "jupyter", "type": "NodePort", "ports": [8888]}
    ]
    # Also published on the gateway through an HTTPRoute, and through a Contour HTTPProxy.
    routes = [
        (i["kind"], i["name"], i["hosts"]) for i in draft.evidence["containers"][0]["ingresses"]
    ]
    assert ("HTTPRoute", "jupyter", ["notebooks.orbital.example.com"]) in routes
    assert ("HTTPProxy", "jupyter-lab", ["lab.orbital.example.com"]) in routes
    assert len(routes) == 2
    assert "HTTPRoute jupyter" in draft.title
    assert draft.evidence["containers"][0]["reasons"] == [
        "no token or password (--IdentityProvider.token empty)"
    ]
    assert draft.evidence["containers"][0]["authentication"] == "off"


def test_demo_egress_policies(demo):
    found = {
        cluster: {(*d.tenants, d.subject_name) for d in run_checks(world, ["K8S-007"])}
        for cluster, world in demo.items()
    }
    assert found["prod-east"] == {
        ("analytics", "analytics-batch"),
        ("analytics", "analytics-notebooks"),
        # Its egress policy stands, but a Calico Allow to anywhere opens the Triton pods.
        ("clinical", "clinical-imaging"),
        ("orbital", "cust-orbital"),
        ("research", "research-llm"),
        ("unclassified", "ml-sandbox"),  # nobody's namespace, judged as a tenant of its class
    }  # gpu-validation's GPU jobs have finished
    # neo-west runs flannel alone: cust-kestrel's NetworkPolicy and research-eval's
    # CiliumNetworkPolicy (a Cilium trial's leftover) restrict nothing there.
    assert found["neo-west"] == {
        ("analytics", "analytics-batch"),
        ("kestrel", "cust-kestrel"),
        ("orbital", "cust-orbital"),
        ("research", "research-eval"),
        ("research", "research-llm"),
        ("research", "research-vc"),  # the vcluster's synced pods (demo/newest.py)
    }
    verdicts = {
        d.subject_name: d.evidence["verdict"] for d in run_checks(demo["neo-west"], ["K8S-007"])
    }
    assert verdicts["research-llm"] == "not restricted"
