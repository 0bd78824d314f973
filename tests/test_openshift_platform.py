"""OpenShift's own namespaces (`openshift`, `openshift-*`) are the platform's on a cluster its
nodes prove OpenShift (`node.openshift.io/os_id`), never by the name alone; a tenant's claim
still wins, the GPU Operator installed by OLM is still found, and K8S-009 still reads SCCs."""

from __future__ import annotations

import pytest

from inventory.models import Cluster
from inventory.platform import stored_platform_namespaces
from inventory.sources.normalise import normalise
from inventory.sources.openshift import openshift_namespaces
from tests.gke_world import by_check, container, daemonset, pod
from tests.ocp_world import (
    AGENTS,
    OPERATOR_NS,
    TENANTS,
    WORKER,
    namespace,
    openshift_namespace,
    snapshot,
    sync_and_score,
)
from tests.posture.openshift_world import binding

pytestmark = pytest.mark.django_db

OPENSHIFT_AGENTS = {ns for ns, _, _ in AGENTS}
AGENT_NAMES = {name for _, name, _ in AGENTS}
POD_CHECKS = ("POD-001", "POD-003", "POD-005")


def stored() -> frozenset[str]:
    return stored_platform_namespaces(Cluster.objects.get(name="ocp-lab"))


def impostor() -> list[dict]:
    """A namespace named like OpenShift's, running a privileged GPU pod."""
    miner = container(
        "m", "docker.io/someone/miner:1", gpus=1, securityContext={"privileged": True}
    )
    return [
        openshift_namespace("openshift-tenant"),
        daemonset("openshift-tenant", "miner", {"app": "miner"}, [miner]),
        pod("openshift-tenant", "miner-x1", WORKER, [miner], "miner", {"app": "miner"}),
    ]


def test_openshifts_own_namespaces_are_the_platforms(tmp_path, personas):
    findings = sync_and_score(tmp_path, snapshot())
    # Before: POD-001, POD-005 (critical) and POD-003 (high) on each of the six agents, and
    # "unclassified" sharing every GPU node finding.
    assert [f for f in findings if "unclassified" in f["tenants"]] == []
    for check in POD_CHECKS:
        assert by_check(findings, check) == []
    # The same from the stored inventory (a watch re-sync, telemetry attribution, DRA pages),
    # and the GPU Operator installed by OLM is still the platform's by its own evidence.
    assert OPENSHIFT_AGENTS | {OPERATOR_NS} <= stored()


def test_the_name_alone_places_nothing_on_a_cluster_that_is_not_openshift(tmp_path, personas):
    # Same objects, OpenShift's namespace labels and annotations included, but no node proves
    # the cluster OpenShift: anyone allowed to create a namespace could have named these.
    findings = sync_and_score(tmp_path, snapshot(openshift=False, extra=impostor()))
    assert {f["subject_name"] for f in by_check(findings, "POD-001")} == AGENT_NAMES | {"miner"}
    assert {f["subject_name"] for f in by_check(findings, "TEN-001")} == {"openshift-tenant"}
    assert not stored() & (OPENSHIFT_AGENTS | {"openshift-tenant"})
    assert OPERATOR_NS in stored()


def test_a_tenant_claiming_an_openshift_namespace_keeps_it(tmp_path, personas):
    tenants = {
        "tenants": [
            {**TENANTS["tenants"][0], "namespaces": ["vision", "openshift-tenant"]},
            {"slug": "ops", "name": "Ops", "trust_class": "internal", "namespaces": ["ops"]},
        ]
    }
    # One claimed in the registry, one by the namespace label naming a real tenant.
    labelled = namespace("openshift-nfd", labels={"gpuposture.io/tenant": "ops"})
    world = snapshot(extra=impostor())
    world["items"] = [
        labelled if o["kind"] == "Namespace" and o["metadata"]["name"] == "openshift-nfd" else o
        for o in world["items"]
    ]
    findings = sync_and_score(tmp_path, world, tenants)
    # Whose workload each is (its tenants add those beside it: POD-001's neighbours).
    privileged = {
        (f["subject_name"], f["evidence"]["tenant"]) for f in by_check(findings, "POD-001")
    }
    assert privileged == {("miner", "vision"), ("nfd-worker", "ops")}
    # The stored set leaves the registry's claims to its readers (platform_inputs gives them
    # the tenants' namespaces beside it), as for the GPU Operator's namespace; a label claims.
    assert "openshift-nfd" not in stored()
    assert OPENSHIFT_AGENTS - {"openshift-nfd"} <= stored()


def test_k8s009_still_reads_the_sccs_on_openshift(tmp_path, personas):
    # A default cluster admits only restricted pods: no K8S-009. A tenant account granted
    # the privileged SCC opens it, as before.
    assert by_check(sync_and_score(tmp_path, snapshot()), "K8S-009") == []
    grant = binding(
        "RoleBinding",
        "trainer-privileged",
        "system:openshift:scc:privileged",
        [{"kind": "ServiceAccount", "name": "default", "namespace": "vision"}],
        namespace="vision",
    )
    (finding,) = by_check(sync_and_score(tmp_path, snapshot(extra=[grant])), "K8S-009")
    assert finding["tenants"] == ["vision"]
    assert "SCC privileged" in finding["title"]


def test_only_a_node_label_proves_openshift():
    names = {"openshift", "openshift-dns", "openshiftish", "kube-foo", "vision"}
    rhcos = [{"node.openshift.io/os_id": "rhcos"}]
    assert openshift_namespaces(names, rhcos) == {"openshift", "openshift-dns"}
    assert openshift_namespaces(names, [{"node-role.kubernetes.io/worker": ""}]) == set()
    assert openshift_namespaces(names, []) == set()


def test_the_snapshot_read_records_them_too():
    # What a sync records as the platform's namespaces (GPU configuration is read there).
    read = normalise(snapshot()["items"])
    assert OPENSHIFT_AGENTS | {OPERATOR_NS} <= set(read.platform_namespaces)
    vanilla = normalise(snapshot(openshift=False, extra=impostor())["items"])
    assert not set(vanilla.platform_namespaces) & (OPENSHIFT_AGENTS | {"openshift-tenant"})
    claimed = normalise(snapshot()["items"], tenant_namespaces=["openshift-nfd"])
    assert "openshift-nfd" not in claimed.platform_namespaces


def mcd_node_writer() -> list[dict]:
    """OpenShift's machine-config-daemon may update nodes (it drains and labels them)."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "machine-config-daemon"},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch", "update"]}],
    }
    account = {
        "kind": "ServiceAccount",
        "name": "machine-config-daemon",
        "namespace": "openshift-machine-config-operator",
    }
    return [
        role,
        binding("ClusterRoleBinding", "machine-config-daemon", role["metadata"]["name"], [account]),
    ]


@pytest.mark.parametrize("openshift", [True, False])
def test_openshifts_own_service_accounts_are_the_platforms(tmp_path, personas, openshift):
    findings = sync_and_score(tmp_path, snapshot(openshift=openshift, extra=mcd_node_writer()))
    writers = [f for f in by_check(findings, "K8S-003") if "unclassified" in f["tenants"]]
    # On OpenShift its own node agent's account administers nodes by design; elsewhere a
    # namespace named like OpenShift's is nobody's, and its account's reach is judged.
    if openshift:
        assert writers == []
    else:
        (writer,) = writers
        assert "openshift-machine-config-operator/machine-config-daemon" in writer["title"]
