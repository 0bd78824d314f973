"""OpenShift's SecurityContextConstraints read from the live API (the official client against
the fake API server) and judged by K8S-009; a list the account may not make is unknown."""

from __future__ import annotations

import pytest

from inventory.services import cluster_sync
from inventory.sync import cluster_get_or_create
from tests.kubeapi import LIST_PATHS, FakeKubeAPI
from tests.posture.admission_world import namespace
from tests.posture.gpu_access_world import node
from tests.posture.openshift_world import binding, default_openshift
from tests.test_admission_sync import _k8s009, _policies, _reads, _source, gpu_pod

pytestmark = pytest.mark.django_db
SCC = "security.openshift.io/securitycontextconstraints"


@pytest.fixture(autouse=True)
def full_lists(settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 0


def openshift_world() -> list[dict]:
    """alpha's `trainer` account may use the privileged SCC; beta has the defaults only."""
    trainer = {"kind": "ServiceAccount", "name": "trainer", "namespace": "alpha"}
    return [
        node("gpu-a", gpus=4),
        namespace("alpha"),
        namespace("beta"),
        gpu_pod("alpha"),
        gpu_pod("beta"),
        *default_openshift(),
        binding(
            "RoleBinding",
            "trainer-privileged",
            "system:openshift:scc:privileged",
            [trainer],
            namespace="alpha",
        ),
    ]


def test_sccs_are_read_live_and_judged(tmp_path):
    with FakeKubeAPI(openshift_world()) as api:
        api.not_served = {"kyverno.io", "constraints.gatekeeper.sh", "config.gatekeeper.sh"}
        cluster = cluster_get_or_create(name="ocp")
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
    assert run.status == "succeeded", run.error
    assert _reads(cluster)[SCC] == "read"
    assert "SecurityContextConstraints/privileged" in _policies(cluster)
    assert _k8s009(cluster) == {"alpha": "not enforced"}


def test_sccs_the_account_may_not_list_make_k8s009_unknown(tmp_path):
    with FakeKubeAPI(openshift_world()) as api:
        api.not_served = {"kyverno.io", "constraints.gatekeeper.sh", "config.gatekeeper.sh"}
        api.forbid(LIST_PATHS["SecurityContextConstraints"])
        cluster = cluster_get_or_create(name="ocp-forbidden")
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
    assert run.status == "succeeded", run.error
    assert _reads(cluster)[SCC] == "forbidden"
    assert _k8s009(cluster) == {"alpha": "unknown", "beta": "unknown"}
