"""A pod finding that is a way out of the container onto its node (POD-001..005) also affects
the other parties with active pods on the nodes where the workload's replicas run
(posture.rules.pod.neighbours): one finding per workload still, owned by its tenant."""

from __future__ import annotations

import pytest

from inventory.snapshot import TEMPLATE_PHASE, Container, Pod, Workload
from tests.posture.builders import container, host_path, inputs, pod, run, tenant

HPC = tenant("hpc", namespaces=("slurm",))
VISION = tenant("vision", cls="sensitive", namespaces=("team-vision",))
OTHER = tenant("other", namespaces=("team-other",))
TENANTS = (HPC, VISION, OTHER)

# What makes each check fire on the owner's pod.
WAYS_OUT = {
    "POD-001": dict(containers=(container(privileged=True),)),
    "POD-002": dict(host_pid=True),
    "POD-003": dict(volumes=(host_path("dev", "/dev"),)),
    "POD-004": dict(containers=(container(capabilities_add=("SYS_ADMIN",)),)),
    "POD-005": dict(volumes=(host_path("caps", "/dev/nvidia-caps"),)),
}


def _slurmd(name: str, node: str | None, **fields) -> Pod:
    return pod("slurm", name, node=node, owner_kind="StatefulSet", owner_name="slurmd", **fields)


def _only(check_id: str, *pods: Pod, **snapshot) -> object:
    drafts = run(check_id, inputs(pods=pods, tenants=TENANTS, **snapshot))
    assert len(drafts) == 1, drafts
    return drafts[0]


@pytest.mark.parametrize("check_id", sorted(WAYS_OUT))
def test_the_tenant_beside_the_workload_on_its_node_is_affected(check_id):
    found = _only(
        check_id,
        _slurmd("slurmd-0", "gpu-8", **WAYS_OUT[check_id]),
        pod("team-vision", "vit-0", node="gpu-8", gpu={"nvidia.com/gpu": 4}),
        pod("team-other", "far-0", node="gpu-9"),  # another node: out of reach
    )
    assert found.tenants == ("hpc", "vision")
    # Still the owner's workload finding: same subject, the owner named as such.
    assert (found.subject_kind, found.subject_namespace, found.subject_name) == (
        "StatefulSet",
        "slurm",
        "slurmd",
    )
    assert found.evidence["tenant"] == "hpc"
    assert found.evidence["neighbours"] == {"vision": {"nodes": ["gpu-8"], "node_count": 1}}
    assert "other tenants' pods run there" in found.evidence["neighbours_why"]
    assert found.tenant_exposures == {"vision": 1}


def test_each_neighbour_counts_the_nodes_it_shares_with_the_replicas():
    found = _only(
        "POD-001",
        *(_slurmd(f"slurmd-{i}", f"gpu-{i}", **WAYS_OUT["POD-001"]) for i in range(3)),
        pod("team-vision", "vit-0", node="gpu-0"),
        pod("team-vision", "vit-1", node="gpu-1"),
        pod("team-vision", "vit-2", node="gpu-1"),
        pod("team-other", "o-0", node="gpu-2"),
        pod("kube-system", "dcgm", node="gpu-0"),  # the platform is no party
        pod("lost-ns", "x", node="gpu-2"),  # nobody's namespace: the unclassified party
    )
    assert found.tenants == ("hpc", "other", "unclassified", "vision")
    assert found.evidence["neighbours"] == {
        "other": {"nodes": ["gpu-2"], "node_count": 1},
        "unclassified": {"nodes": ["gpu-2"], "node_count": 1},
        "vision": {"nodes": ["gpu-0", "gpu-1"], "node_count": 2},
    }
    # The owner keeps its three replicas; each neighbour weighs the nodes it shares.
    assert found.exposure == 3
    assert found.tenant_exposures == {"other": 1, "unclassified": 1, "vision": 2}


def test_finished_and_unscheduled_pods_reach_no_one():
    found = _only(
        "POD-001",
        _slurmd("slurmd-0", None, phase="Pending", **WAYS_OUT["POD-001"]),  # on no node yet
        _slurmd("slurmd-1", "gpu-8", phase="Succeeded", **WAYS_OUT["POD-001"]),
        pod("team-vision", "vit-0", node="gpu-8"),
        pod("team-other", "done", node=None, phase="Pending"),
    )
    assert found.tenants == ("hpc",)
    assert "neighbours" not in found.evidence


def test_a_finished_neighbour_is_not_affected():
    found = _only(
        "POD-001",
        _slurmd("slurmd-0", "gpu-8", **WAYS_OUT["POD-001"]),
        pod("team-vision", "vit-0", node="gpu-8", phase="Succeeded"),
    )
    assert found.tenants == ("hpc",)


def test_a_workload_scaled_to_zero_affects_only_its_owner():
    template = Pod(
        namespace="slurm",
        name="slurmd",
        phase=TEMPLATE_PHASE,
        owner_kind="StatefulSet",
        owner_name="slurmd",
        containers=(Container("main", "r.example/s:1", privileged=True),),
    )
    found = _only(
        "POD-001",
        pod("team-vision", "vit-0", node="gpu-8"),
        workloads=(Workload("StatefulSet", "slurm", "slurmd", template=template, replicas=0),),
    )
    assert found.tenants == ("hpc",)
    assert found.evidence["from_template"] is True


@pytest.mark.parametrize(
    ("fields", "tenants"),
    [
        ({"host_pid": True}, ("hpc", "vision")),
        ({"host_network": True}, ("hpc", "vision")),
        # The host's IPC namespace is shared by no other tenant's ordinary pod.
        ({"host_ipc": True}, ("hpc",)),
    ],
)
def test_pod002_reaches_neighbours_through_host_pid_or_network_only(fields, tenants):
    found = _only(
        "POD-002",
        _slurmd("slurmd-0", "gpu-8", **fields),
        pod("team-vision", "vit-0", node="gpu-8"),
    )
    assert found.tenants == tenants


def test_checks_that_do_not_leave_the_container_stay_the_owners():
    """POD-006 (requests differ from limits) is about the workload alone."""
    world = inputs(
        pods=(
            _slurmd(
                "slurmd-0",
                "gpu-8",
                containers=(container(gpu_requests={"nvidia.com/gpu": "1"}),),
            ),
            pod("team-vision", "vit-0", node="gpu-8"),
        ),
        tenants=TENANTS,
    )
    drafts = run("POD-006", world)
    assert [d.tenants for d in drafts] == [("hpc",)]


def test_the_unclaimed_namespaces_workload_is_still_claimed_first():
    """Claiming the namespace decides whose the workload is (posture.claims), also when its
    way onto the node affects the tenants beside it; a real tenant's, or a viewer's reading
    of it (the party hidden), is no claim."""
    from posture.claims import claim_namespace

    sandbox = _only(
        "POD-001",
        pod("ml-sandbox", "root", containers=(container(privileged=True),), node="gpu-8"),
        pod("team-vision", "vit-0", node="gpu-8"),
    )
    assert sandbox.tenants == ("unclassified", "vision")
    subject = ("Pod", "ml-sandbox", "root", sandbox.evidence)
    assert claim_namespace(sandbox.tenants, *subject) == "ml-sandbox"
    assert claim_namespace(("vision",), *subject) == ""  # vision's viewer
    assert claim_namespace(("unclassified", "other"), *subject) == ""  # not a neighbour


@pytest.mark.parametrize(
    ("capability", "tenants"),
    [("SYS_ADMIN", ("hpc", "vision")), ("SYS_MODULE", ("hpc", "vision")), ("NET_RAW", ("hpc",))],
)
def test_pod004_reaches_neighbours_through_a_critical_capability_only(capability, tenants):
    found = _only(
        "POD-004",
        _slurmd("slurmd-0", "gpu-8", containers=(container(capabilities_add=(capability,)),)),
        pod("team-vision", "vit-0", node="gpu-8"),
    )
    assert found.tenants == tenants
