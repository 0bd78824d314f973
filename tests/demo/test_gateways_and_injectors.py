"""The demo shows the newest constructs the product reads (demo/k8s_serving.py, k8s_knative.py,
k8s_rollouts.py), as a user sees them through the API: a Kubeflow notebook behind an
authenticating Istio gateway (no finding; the route's stored authentication names the policies)
and one behind a gateway that authenticates nothing (K8S-006 saying why); KServe's serverless
vLLM reached through Knative's queue-proxy; an OpenKruise SidecarSet's hostPath filed per
workload and fixed by one action; an Argo Rollout's workloadRef giving one finding on the
Deployment. Needs the database: the demo is built through the real paths (once: the checks
share one test)."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from inventory.models import ClusterObject
from posture.models import Action

pytestmark = pytest.mark.django_db


def _rows(client: Client, path: str, **query: str) -> list[dict]:
    return client.get(f"/api/v1/{path}/", {"page_size": "200", **query}).json()["results"]


def _one(client: Client, check: str, cluster: str, name: str) -> dict:
    found = _rows(client, "findings", check=check, cluster=cluster, status="open")
    (finding,) = [f for f in found if f["subject_name"] == name]
    return finding


def test_the_demo_shows_gateways_serverless_models_a_sidecarset_and_a_rollout():
    call_command("demo", stdout=io.StringIO())
    client = Client()
    client.force_login(User.objects.get(username="admin"))

    # (1) prod-east: Kubeflow's gateway authenticates (oauth2-proxy CUSTOM, require-jwt DENY):
    # analytics' notebook there serves without a token by design and is no finding; the
    # route's stored authentication says which policies make it so.
    k8s006 = _rows(client, "findings", check="K8S-006", cluster="prod-east", status="open")
    assert not [f for f in k8s006 if f["subject_name"] == "nb-feature-prep"]
    route = ClusterObject.objects.get(
        cluster__name="prod-east",
        kind="ingress",
        name="VirtualService/notebook-analytics-notebooks-nb-feature-prep",
    )
    auth = route.data["auth"]
    assert "istio-ingressgateway-oauth2-proxy: CUSTOM authorization by oauth2-proxy" in auth
    assert "istio-ingressgateway-require-jwt: DENY of requests without a valid JWT" in auth
    assert "Gateway kubeflow/kubeflow-gateway (pods of istio-system/istio-ingressgateway)" in auth

    # neo-west: research's Kubeflow trial left oauth2-proxy out; Mira's notebook is open, and
    # the finding says nothing authenticates and the profile's header is anyone's.
    notebook = _one(client, "K8S-006", "neo-west", "nb-mira")
    assert notebook["subject_kind"] == "Notebook" and notebook["tenants"] == ["research"]
    (entry,) = notebook["evidence"]["containers"]
    assert entry["reachable_through"] == [
        "VirtualService notebook-research-eval-nb-mira on kubeflow/kubeflow-gateway"
    ]
    (why,) = entry["route_authentication"]
    assert why.startswith(
        "VirtualService notebook-research-eval-nb-mira: none: nothing authenticates on Gateway "
        "kubeflow/kubeflow-gateway"
    )
    assert "ns-owner-access-istio allows a request header any client sets (kubeflow-userid)" in why
    assert "verdict" not in entry

    # (2) KServe serverless: orbital's vLLM without an API key, published by Kourier's
    # KIngress through the revision's public Service and Knative's queue-proxy; the finding is
    # on the InferenceService, the thing to edit.
    model = _one(client, "K8S-006", "neo-west", "bio-llm")
    assert (model["subject_kind"], model["tenants"]) == ("InferenceService", ["orbital"])
    (entry,) = model["evidence"]["containers"]
    assert (entry["container"], entry["server"]) == ("kserve-container", "vLLM OpenAI server")
    (ingress,) = entry["ingresses"]
    assert (ingress["kind"], ingress["name"]) == ("KIngress", "bio-llm-predictor")
    assert ingress["service"] == "bio-llm-predictor-00001"
    assert ingress["via"] == "Knative queue-proxy (8012 -> kserve-container:8080)"
    assert entry["reachable_through"] == ["KIngress bio-llm-predictor via Knative's queue-proxy"]

    # (3) The SidecarSet's writable /var/log/pods: one POD-003 per injected Deployment, each
    # marking the volume as the SidecarSet's, and one action at the SidecarSet closing both.
    injected = [_one(client, "POD-003", "prod-east", name) for name in ("vllm-dev", "vllm-canary")]
    for finding in injected:
        assert finding["subject_kind"] == "Deployment"
        (volume,) = finding["evidence"]["volumes"]
        assert (volume["host_path"], volume["injected_by"]) == (
            "/var/log/pods",
            "SidecarSet vllm-log-agent",
        )
        assert "injected by SidecarSet vllm-log-agent" in finding["title"]
    ids = {f["id"] for f in injected}
    actions = [a for a in Action.objects.all() if ids & set(a.finding_ids)]
    (action,) = actions
    assert set(action.finding_ids) == ids
    assert action.title.startswith(
        "Remove the host path volumes from SidecarSet vllm-log-agent, which injects them into "
        "the pods of 2 workloads"
    )

    # (4) The Argo Rollout running Deployment fold-api's template: one POD-007, on the
    # Deployment, listing the Rollout's two pods and saying the Rollout runs it.
    pod007 = _rows(client, "findings", check="POD-007", cluster="prod-east", tenant="orbital")
    (rollout,) = [f for f in pod007 if f["subject_name"] == "fold-api"]
    assert rollout["subject_kind"] == "Deployment"
    assert rollout["evidence"]["resolved_by"] == "workloadRef"
    assert rollout["evidence"]["replicas"] == 2 and len(rollout["evidence"]["pods"]) == 2
    assert (
        "Rollout cust-orbital/fold-api runs this Deployment's pod template"
        in rollout["evidence"]["owner_note"]
    )
