"""A watch re-sync keeps the hostPath or local PersistentVolume behind each claim of the pods
and pod templates it rewrites: a tenant pod whose claim is bound to a PV of the node's
/var/lib/kubelet gets the same POD-003 verdict after a watch update as from a full list of the
same cluster. A hostPath PV that changed, or a claim nothing stored names, lists everything
(the official client against the fake API server, tests/kubeapi.py)."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from inventory.services import cluster_sync
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import cluster_get_or_create
from posture.read_model import cluster_snapshot
from tests.kubeapi import FakeKubeAPI
from tests.posture.test_rules_host_paths import _pv

pytestmark = pytest.mark.django_db

TENANTS = {
    "tenants": [
        {"slug": "team-a", "name": "Team A", "trust_class": "external", "namespaces": ["team-a"]}
    ]
}


def claiming(name: str, claim: str, kind: str = "Pod") -> dict[str, Any]:
    """A pod (or a Deployment of none running, judged by its template) mounting a claim."""
    mount = {"name": "data", "mountPath": "/data"}
    spec = {
        "containers": [
            {"name": "main", "image": "registry.example.com/main:1", "volumeMounts": [mount]}
        ],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
    }
    metadata = {"name": name, "namespace": "team-a", "uid": f"uid-{name}", "labels": {}}
    if kind == "Deployment":
        template = {"metadata": {"labels": {"app": name}}, "spec": spec}
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": metadata,
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": name}},
                "template": template,
            },
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {**spec, "nodeName": "gpu-1"},
        "status": {"phase": "Running"},
    }


def world() -> list[dict[str, Any]]:
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "1"}
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "gpu-1", "uid": "uid-gpu-1", "labels": {}},
            "status": {"capacity": resources, "allocatable": resources},
        },
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {}}},
        _pv("pv-kubelet", "data", path="/var/lib/kubelet"),
        claiming("p", "data"),
        claiming("idle", "data", kind="Deployment"),
    ]


def updated() -> list[dict[str, Any]]:
    """A pod's labels and a Deployment's changed (the PV not), and a new pod on the claim."""
    changed = copy.deepcopy(world())
    for obj in changed:
        if obj["metadata"]["name"] in ("p", "idle"):
            obj["metadata"]["labels"] = {"build": "2"}
    return [*changed, claiming("p2", "data")]


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def sync(api: FakeKubeAPI, tmp_path, cluster):
    source = KubeSource(
        kubeconfig=str(api.kubeconfig(tmp_path)),
        context="fake",
        settings=KubeSettings(page_size=2, read_timeout=5.0),
    )
    cluster.refresh_from_db()
    return cluster_sync(cluster=cluster, source=source)


def host_path_findings(name: str) -> set[str]:
    """The titles of the cluster's open POD-003 findings."""
    run("score", "--cluster", name)
    found = json.loads(
        run("export_findings", "--format", "json", "--cluster", name, "--status", "open")
    )
    return {f["title"] for f in found if f["check"] == "POD-003"}


def claim_paths(cluster) -> dict[str, tuple[str | None, str | None]]:
    snapshot = cluster_snapshot(cluster)
    pods = [*snapshot.pods, *(w.template for w in snapshot.workloads if w.template)]
    return {p.name: (v.persistent_volume, v.pv_path) for p in pods for v in p.volumes if v.claim}


@pytest.fixture(autouse=True)
def tenants(tmp_path, settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24  # a second sync watches
    (tmp_path / "tenants.yaml").write_text(yaml.safe_dump(TENANTS))
    run("apply_tenants", str(tmp_path / "tenants.yaml"))


def test_a_watch_update_gives_the_same_pod003_verdict_as_a_full_list(tmp_path):
    with FakeKubeAPI(updated()) as api:
        listed = cluster_get_or_create(name="listed")
        assert sync(api, tmp_path, listed).mode == "full"
    with FakeKubeAPI(world()) as api:
        watched = cluster_get_or_create(name="watched")
        assert sync(api, tmp_path, watched).mode == "full"
        api.replace_objects(updated())
        again = sync(api, tmp_path, watched)
    assert (again.status, again.mode) == ("succeeded", "watch")
    verdicts = host_path_findings("watched")
    assert verdicts == host_path_findings("listed")
    assert {t for t in verdicts if "PersistentVolume pv-kubelet" in t} == verdicts
    assert len(verdicts) == 3  # p, p2 and the idle Deployment's template
    bound = ("pv-kubelet", "/var/lib/kubelet")
    assert claim_paths(watched) == claim_paths(listed) == {"p": bound, "p2": bound, "idle": bound}


def released(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = copy.deepcopy(objects)
    for obj in found:
        if obj["kind"] == "PersistentVolume":
            obj["status"]["phase"] = "Released"
    return found


@pytest.mark.parametrize(
    ("first", "then", "paths", "said"),
    [
        pytest.param(
            [o for o in world() if o["kind"] != "PersistentVolume"],
            world(),
            {"p": ("pv-kubelet", "/var/lib/kubelet"), "idle": ("pv-kubelet", "/var/lib/kubelet")},
            "PersistentVolume pv-kubelet changed",
            id="a hostPath PV created for a stored pod's claim",
        ),
        pytest.param(
            world(),
            released(world()),
            {"p": (None, None), "idle": (None, None)},
            "PersistentVolume pv-kubelet changed",
            id="the PV released",
        ),
        pytest.param(
            [*world(), _pv("pv-etc", "scratch", path="/etc")],
            [*world(), _pv("pv-etc", "scratch", path="/etc"), claiming("s", "scratch")],
            {
                "p": ("pv-kubelet", "/var/lib/kubelet"),
                "idle": ("pv-kubelet", "/var/lib/kubelet"),
                "s": ("pv-etc", "/etc"),
            },
            "claim team-a/scratch",
            id="a pod naming a claim nothing stored names",
        ),
    ],
)
def test_what_the_stored_claims_do_not_give_is_read_by_a_full_list(
    tmp_path, first, then, paths, said
):
    with FakeKubeAPI(first) as api:
        cluster = cluster_get_or_create(name="claims")
        sync(api, tmp_path, cluster)
        api.replace_objects(then)
        again = sync(api, tmp_path, cluster)
    assert (again.status, again.mode) == ("succeeded", "full")
    assert any("listed everything" in w and said in w for w in again.warnings)
    assert claim_paths(cluster) == paths


def test_a_watch_update_keeps_a_generic_ephemeral_volumes_pv(tmp_path):
    # The claim Kubernetes makes for pod e's ephemeral volume `data` is `e-data`.
    ephemeral = claiming("e", "unused")
    template = {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual"}}
    ephemeral["spec"]["volumes"] = [
        {"name": "data", "ephemeral": {"volumeClaimTemplate": template}}
    ]
    first = [*world(), _pv("pv-eph", "e-data", path="/dev"), ephemeral]
    then = copy.deepcopy(first)
    then[-1]["metadata"]["labels"] = {"build": "2"}
    with FakeKubeAPI(first) as api:
        cluster = cluster_get_or_create(name="eph")
        sync(api, tmp_path, cluster)
        api.replace_objects(then)
        again = sync(api, tmp_path, cluster)
    assert (again.status, again.mode) == ("succeeded", "watch")
    assert claim_paths(cluster)["e"] == ("pv-eph", "/dev")
    assert any("PersistentVolume pv-eph" in t for t in host_path_findings("eph"))
