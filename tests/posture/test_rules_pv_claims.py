"""POD-003 / POD-005 through claims: a generic ephemeral volume's claim (named
`<pod>-<volume>`) hands over the node path of the hostPath or local PV bound to it as any claim
does; a local PV on one disk or partition under /dev hands over that disk, never the node's
/dev; a pod's own hostPath is judged as before."""

from __future__ import annotations

import copy

import pytest

from inventory.sources.normalise import normalise
from posture.rules.leak.leftoverlocals import reaches_every_device
from tests.posture.builders import inputs, run
from tests.posture.test_rules_host_paths import TEAM, _claiming_pod, _pv


def _ephemeral_pod(name: str = "p", volume: str = "scratch") -> dict:
    """A pod whose volume is a generic ephemeral volume (its claim made from a template)."""
    pod = _claiming_pod("unused")
    pod["metadata"]["name"] = name
    pod["spec"]["containers"][0]["volumeMounts"][0]["name"] = volume
    template = {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual"}}
    pod["spec"]["volumes"] = [{"name": volume, "ephemeral": {"volumeClaimTemplate": template}}]
    return pod


def _fired(objects: list[dict]) -> set[str]:
    world = inputs(pods=normalise(objects).pods, tenants=(TEAM,))
    return {check for check in ("POD-003", "POD-005") if run(check, world)}


def test_a_generic_ephemeral_volume_bound_to_a_hostpath_pv_is_pod003():
    objects = [_ephemeral_pod(), _pv("pv-eph-dev", "p-scratch", path="/dev")]
    (draft,) = run("POD-003", inputs(pods=normalise(objects).pods, tenants=(TEAM,)))
    (entry,) = draft.evidence["volumes"]
    assert entry["type"] == "ephemeral"
    assert entry["field"] == "spec.volumes[0].ephemeral.volumeClaimTemplate"
    assert entry["through"] == {"claim": "p-scratch", "persistent_volume": "pv-eph-dev"}
    assert "PersistentVolume pv-eph-dev" in draft.title


@pytest.mark.parametrize(
    ("claim", "path", "fired"),
    [
        ("p-scratch", "/dev/nvidia-caps", {"POD-003", "POD-005"}),
        ("p-scratch", "/opt/local-path-provisioner/pvc-1_team-a_p-scratch", set()),
        ("other-scratch", "/dev", set()),  # another pod's ephemeral claim: not this one's
    ],
)
def test_an_ephemeral_claim_is_judged_like_any_claim(claim, path, fired):
    assert _fired([_ephemeral_pod(), _pv("pv", claim, path=path)]) == fired


def test_a_template_ephemeral_volume_names_no_claim():
    # A Deployment's pods are named when created: their claims are unknown, nothing guessed.
    pod = _ephemeral_pod()
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "p", "namespace": "team-a"},
        "spec": {"replicas": 0, "template": {"metadata": {}, "spec": pod["spec"]}},
    }
    snapshot = normalise([deployment, _pv("pv", "p-scratch", path="/dev")])
    (workload,) = [w for w in snapshot.workloads if w.template is not None]
    assert [v.claim for v in workload.template.volumes] == [None]


@pytest.mark.parametrize(
    "path",
    [
        "/dev/vdb1",
        "/dev/disk/by-id/nvme-SAMSUNG_MZQL23T8HCLS-00A07_S64HNE0T",
        "/dev/mapper/vg0-scratch",
        "/dev//nvme1n1",
        "/dev/nvme0n1p2",
        "/dev/sdb",
        "/dev/xvdf1",
    ],
)
def test_a_local_pv_on_one_disk_under_dev_is_not_all_of_dev(path):
    pv = _pv("local-disk", "data", path=path, kind="local")
    assert _fired([_claiming_pod("data"), pv]) == set()
    (pod,) = normalise([_claiming_pod("data"), pv]).pods
    assert reaches_every_device(pod) is None  # nor every GPU for the leftover-locals check


@pytest.mark.parametrize(
    ("path", "fired"),
    [
        ("/dev", {"POD-003"}),
        ("/dev/nvidia-caps", {"POD-003", "POD-005"}),
        ("/dev/dri", {"POD-003"}),
        ("/dev/vfio", {"POD-003"}),
        ("/dev/infiniband", {"POD-003"}),
        # Not a disk by its name: taken as the directory of device nodes it may be (fail
        # closed; rtself10 k29, k51): CPU MSR/CPUID nodes, NVIDIA's IMEX channels.
        ("/dev/cpu", {"POD-003"}),
        ("/dev/nvidia-caps-imex-channels", {"POD-003"}),
        ("/dev/vg0/scratch", {"POD-003"}),
    ],
)
def test_a_local_pv_on_dev_or_a_directory_of_device_nodes_still_fires(path, fired):
    assert _fired([_claiming_pod("data"), _pv("pv", "data", path=path, kind="local")]) == fired


def test_hostpath_pvs_and_a_pods_own_hostpath_under_dev_are_unchanged():
    # A hostPath PV is the node's path as written, whatever it names under /dev.
    assert _fired([_claiming_pod("data"), _pv("pv", "data", path="/dev/vdb1")]) == {"POD-003"}
    own = copy.deepcopy(_claiming_pod("data"))
    own["spec"]["volumes"] = [{"name": "data", "hostPath": {"path": "/dev/vdb1"}}]
    (draft,) = run("POD-003", inputs(pods=normalise([own]).pods, tenants=(TEAM,)))
    assert draft.evidence["volumes"][0]["reason"].startswith("under /dev: host device nodes")


def test_dev_shm_is_named_the_nodes_shared_memory_not_its_devices():
    """A tmpfs with no device node in it (rtself10 k28): its reason says what it holds."""
    from posture.rules.pod.host_areas import dangerous_host_path

    reason = dangerous_host_path("/dev/shm")
    assert reason is not None and reason.startswith("/dev/shm: the node's shared memory")
    assert "GPU" not in reason
