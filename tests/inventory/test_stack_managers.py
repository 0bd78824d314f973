"""Who upgrades each GPU-stack component of a node (inventory/stack_managers.py): the GPU
Operator, the node image or host packages (a pre-installed driver or toolkit), a chart of its
own, or unknown. Pure: nodes, pods and ClusterPolicies as the snapshot holds them."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from inventory.snapshot import Container, GpuOperatorPolicy, Node, Pod
from inventory.sources.gpu_operator import parse_gpu_operator_values
from inventory.sources.node_versions import stack_versions
from inventory.stack_managers import upgrade_paths, upgraded_by
from inventory.stack_rollout import precompiled_branch, rollout_pending
from posture.rules.stack.upgrade_by import upgrade_evidence

OPERATOR_SEEN = {"gpu_operator": "Deployment gpu-operator/gpu-operator"}
NO_OPERATOR = {"gpu_operator": "no GPU Operator Deployment, pod or ClusterPolicy in the cluster"}


def node(labels: dict[str, str] | None = None, *, operator: bool = True, **fields) -> Node:
    return Node(
        "gpu-1",
        labels=labels or {},
        gpu_count=1,
        deployed=OPERATOR_SEEN if operator else {},
        not_installed={} if operator else NO_OPERATOR,
        **fields,
    )


def policy(**sections: dict) -> tuple[GpuOperatorPolicy, ...]:
    """A ClusterPolicy with these spec sections, as the sync stores it (what was read of it)."""
    return (read_policy("cluster-policy", sections),)


def read_policy(name: str, spec: dict) -> GpuOperatorPolicy:
    return GpuOperatorPolicy(name, spec=asdict(parse_gpu_operator_values(spec)))


def ds_pod(namespace: str, daemonset: str, image: str) -> Pod:
    return Pod(
        namespace=namespace,
        name=f"{daemonset}-x1",
        node_name="gpu-1",
        phase="Running",
        containers=(Container(name="main", image=image),),
        owner_kind="DaemonSet",
        owner_name=daemonset,
    )


TOOLKIT = ds_pod(
    "gpu-operator",
    "nvidia-container-toolkit-daemonset",
    "nvcr.io/nvidia/k8s/container-toolkit:v1.17.0",
)


@pytest.mark.parametrize(
    ("labels", "spec", "fields", "managed_by", "change"),
    [
        # AKS: the Operator finds the host driver and labels the node.
        (
            {
                "nvidia.com/gpu.deploy.driver": "pre-installed",
                "kubernetes.azure.com/agentpool": "nc",
            },
            {},
            {},
            "pre_installed",
            "node image",
        ),
        # EKS accelerated AMI: the chart's values turn the driver off.
        (
            {"eks.amazonaws.com/nodegroup": "gpu"},
            {"driver": {"enabled": False}},
            {},
            "pre_installed",
            "node image",
        ),
        # GKE: no GPU Operator; GKE installs the driver for the pool's version.
        ({"cloud.google.com/gke-nodepool": "a100"}, None, {}, "gke", "node image"),
        # Bare metal with the driver from the distribution's packages.
        ({}, {"driver": {"enabled": False}}, {}, "pre_installed", "host"),
        (
            {},
            {"driver": {"enabled": False}},
            {"os_image": "Bottlerocket OS 1.26.1 (aws-k8s-1.30-nvidia)"},
            "pre_installed",
            "node image",
        ),
        # The Operator would install it, but no driver pod runs and no label says why.
        ({}, {}, {}, "unknown", "unknown driver"),
    ],
)
def test_the_driver_is_upgraded_where_it_was_installed(labels, spec, fields, managed_by, change):
    if spec is None:  # no GPU Operator in the cluster
        path = upgrade_paths(node(labels, operator=False, **fields), (), [])["driver"]
    else:
        path = upgrade_paths(node(labels, **fields), policy(**spec), [TOOLKIT])["driver"]
    assert (path.managed_by, path.change) == (managed_by, change)
    if managed_by != "unknown":
        assert "ClusterPolicy" not in path.how


def test_an_operator_driver_pod_is_the_operators():
    pod = ds_pod(
        "gpu-operator", "nvidia-driver-daemonset", "nvcr.io/nvidia/driver:550.90.07-ubuntu22.04"
    )
    path = upgrade_paths(node(), policy(driver={"enabled": True}), [pod])["driver"]
    assert path.managed_by == "gpu_operator" and "ClusterPolicy" in path.how


def test_a_pre_installed_toolkit_is_the_hosts_and_the_operators_toolkit_pod_the_operators():
    paths = upgrade_paths(node(), policy(toolkit={"enabled": False}), [])
    assert paths["container_toolkit"].managed_by == "pre_installed"
    paths = upgrade_paths(node(), policy(), [TOOLKIT])
    assert paths["container_toolkit"].change == "gpu_operator"
    assert paths["gpu_operator"].change == "gpu_operator"


def test_a_device_plugin_of_its_own_chart_is_upgraded_through_that_chart():
    plugin = ds_pod(
        "kube-system", "nvdp-nvidia-device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
    )
    paths = upgrade_paths(node(), policy(devicePlugin={"enabled": False}), [TOOLKIT, plugin])
    path = paths["device_plugin"]
    assert path.managed_by == "own_deployment"
    assert path.change == "DaemonSet kube-system/nvdp-nvidia-device-plugin"
    assert "devicePlugin.enabled is false" in path.why
    # Without any GPU Operator (EKS with NVIDIA's device-plugin chart), the same.
    paths = upgrade_paths(node(operator=False), (), [plugin])
    assert paths["device_plugin"].managed_by == "own_deployment"
    assert paths["driver"].managed_by == "pre_installed"


def test_policies_that_disagree_settle_nothing():
    two = (
        read_policy("a", {"driver": {"enabled": False}}),
        read_policy("b", {"driver": {"enabled": True}}),
    )
    assert upgrade_paths(node(), two, [])["driver"].managed_by == "unknown"


DRIVER_POD = ds_pod(
    "gpu-operator", "nvidia-driver-daemonset", "nvcr.io/nvidia/driver:580.126.09-ubuntu22.04"
)
DRIVER_BELOW = {"component": "driver", "installed": "580.126.09", "fixed_version": "580.159.03"}


@pytest.mark.parametrize(
    ("driver", "pending"),
    [
        # The ClusterPolicy asks for the fix; the node's driver pod still runs the old one.
        ({"version": "580.159.03"}, {"driver": "580.159.03"}),
        ({"version": "580.172.01"}, {"driver": "580.172.01"}),
        # It asks for a version still below the fix: the version must be set.
        ({"version": "580.126.09"}, {}),
        # NVIDIADriver objects set the driver: the ClusterPolicy's version is unused.
        ({"version": "580.159.03", "useNvidiaDriverCRD": True}, {}),
        # No version stated: nothing is known to be asked for.
        ({}, {}),
    ],
)
def test_a_fixed_version_the_clusterpolicy_already_asks_for_is_a_pending_rollout(driver, pending):
    paths = upgrade_paths(node(), policy(driver={"enabled": True, **driver}), [DRIVER_POD])
    assert rollout_pending(paths, [DRIVER_BELOW]) == pending


R570_POD = ds_pod(
    "gpu-operator", "nvidia-driver-daemonset", "nvcr.io/nvidia/driver:570.172.08-ubuntu22.04"
)
# A bulletin fixing R570 at 570.211.01 and R580 at 580.159.03, as the exposure records it.
R570_BELOW = {
    "component": "driver",
    "installed": "570.172.08",
    "fixed_version": "570.211.01",
    "branch_fixes": {"R570": "570.211.01", "R580": "580.159.03"},
}
R570_OLD_RECORD = {k: v for k, v in R570_BELOW.items() if k != "branch_fixes"}


@pytest.mark.parametrize(
    ("asked", "exposure", "pending"),
    [
        # Above R570's fix by number, but below R580's own: still exposed, no pending fix.
        ("580.105.08", R570_BELOW, {}),
        # At R580's own fix: the rollout is what is left.
        ("580.159.03", R570_BELOW, {"driver": "580.159.03"}),
        # A branch the bulletin does not name: not known fixed.
        ("590.44.01", R570_BELOW, {}),
        # A record without branch_fixes: only its own branch can be judged.
        ("580.159.03", R570_OLD_RECORD, {}),
        ("570.211.01", R570_OLD_RECORD, {"driver": "570.211.01"}),
    ],
)
def test_a_version_on_another_branch_is_pending_only_if_fixed_on_its_own(asked, exposure, pending):
    spec = {"enabled": True, "version": asked}
    paths = upgrade_paths(node(), policy(driver=spec), [R570_POD])
    assert rollout_pending(paths, [exposure]) == pending


def test_a_pre_installed_driver_is_never_a_pending_rollout():
    # driver.enabled false: the Operator ignores driver.version, the node image carries it.
    spec = {"enabled": False, "version": "580.159.03"}
    paths = upgrade_paths(node(), policy(driver=spec), [])
    assert rollout_pending(paths, [DRIVER_BELOW]) == {}


GKE_POOL = {"cloud.google.com/gke-nodepool": "l4"}
GKE_PLUGIN = ds_pod(
    "kube-system",
    "nvidia-gpu-device-plugin-small-cos",
    "gke.gcr.io/nvidia-gpu-device-plugin:v0.0.35-gke.1",
)
GKE_INSTALLER = ds_pod(
    "kube-system", "nvidia-driver-installer", "gke.gcr.io/cos-nvidia-installer:fixed"
)


@pytest.mark.parametrize("operator", [False, True])
def test_gkes_device_plugin_and_driver_installer_are_upgraded_with_the_gke_node_pool(operator):
    """GKE's plugin DaemonSet in kube-system is not a deployment of the user's own: GKE
    reverts edits to it. A node pool upgrade moves it and the driver GKE installs together."""
    gke = node(GKE_POOL, operator=operator)
    paths = upgrade_paths(gke, (), [GKE_PLUGIN, GKE_INSTALLER])
    plugin, driver = paths["device_plugin"], paths["driver"]
    assert (plugin.managed_by, plugin.change) == ("gke", "node image")
    assert (driver.managed_by, driver.change) == ("gke", "node image")
    assert "GKE node pool" in plugin.how and "DaemonSet kube-system" not in plugin.how
    assert "gpu-driver-version" in driver.how and "nvidia-driver-installer" in driver.why
    # NVIDIA's own chart on a GKE pool stays the user's deployment.
    nvdp = ds_pod("kube-system", "nvdp", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0")
    assert upgrade_paths(gke, (), [nvdp])["device_plugin"].managed_by == "own_deployment"


PRECOMPILED = ds_pod(
    "gpu-operator",
    "nvidia-driver-daemonset",
    "nvcr.io/nvidia/driver:535-5.15.0-1048-aws-ubuntu22.04",
)


def test_a_precompiled_driver_has_its_branch_only_never_a_version():
    """usePrecompiled: the image tag is <branch>-<kernel>-<os> and driver.version names the
    branch ("535"): neither is the driver's version, so none is read or asked for."""
    versions = stack_versions({}, [PRECOMPILED])
    assert versions["driver_version"] is None and versions["driver_version_source"] is None
    spec = {"enabled": True, "usePrecompiled": True, "version": "535", "useNvidiaDriverCRD": False}
    path = upgrade_paths(node(), policy(driver=spec), [PRECOMPILED])["driver"]
    assert path.managed_by == "gpu_operator" and path.desired_version is None
    below = {"component": "driver", "installed": "535.104.05", "fixed_version": "535.183.01"}
    assert rollout_pending({"driver": path}, [below]) == {}


def test_the_precompiled_branch_is_named_only_where_every_clusterpolicy_gives_it():
    """The node page's "precompiled branch 535": from driver.version under usePrecompiled,
    where every ClusterPolicy was read and agrees, and no NVIDIADriver object sets it."""
    spec = {"enabled": True, "usePrecompiled": True, "version": "535", "useNvidiaDriverCRD": False}
    assert precompiled_branch(policy(driver=spec)) == "535"
    # The chart's default (nvidiaDriverCRD unstated) leaves the ClusterPolicy in charge.
    unstated = {k: v for k, v in spec.items() if k != "useNvidiaDriverCRD"}
    assert precompiled_branch(policy(driver=unstated)) == "535"
    other = read_policy("other", {"driver": {**spec, "version": "550"}})
    unreadable = GpuOperatorPolicy("broken", error="not a mapping")
    for policies in (
        (),
        policy(driver={**spec, "usePrecompiled": False}),
        policy(driver={**spec, "useNvidiaDriverCRD": True}),
        policy(driver={**spec, "enabled": False}),
        (*policy(driver=spec), other),  # two disagree: which one the Operator acts on is unknown
        (*policy(driver=spec), unreadable),
        # Stored before the sync read driver.useNvidiaDriverCRD: whether it applies is unknown.
        (GpuOperatorPolicy("old", spec={"driver_use_precompiled": True, "driver_version": "535"}),),
    ):
        assert precompiled_branch(policies) is None, policies


@pytest.mark.parametrize(
    ("auto", "says", "not_says"),
    [
        (
            True,
            "sets driver.upgradePolicy.autoUpgrade: the Operator's upgrade controller",
            "delete",
        ),
        (False, "turns driver.upgradePolicy.autoUpgrade off: drain the node", "controller"),
        (None, "With driver.upgradePolicy.autoUpgrade", "ClusterPolicy sets"),
    ],
)
def test_a_pending_driver_rollout_says_who_rolls_it_by_auto_upgrade(auto, says, not_says):
    driver = {"enabled": True, "version": "580.159.03", "useNvidiaDriverCRD": False}
    if auto is not None:
        driver["upgradePolicy"] = {"autoUpgrade": auto}
    paths = upgrade_paths(node(), policy(driver=driver), [DRIVER_POD])
    assert paths["driver"].auto_upgrade is auto
    evidence = upgrade_evidence(paths["driver"], [DRIVER_BELOW], paths)
    assert evidence["rollout_pending"] == {"driver": "580.159.03"}
    assert says in str(evidence["how"]) and not_says not in str(evidence["how"])


def test_who_upgrades_in_a_few_words_for_the_node_and_patch_pages():
    nvdp = ds_pod("kube-system", "nvdp", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0")
    bare = upgraded_by(node(operator=False), (), [nvdp])
    assert bare["driver"] == "host packages" and bare["firmware"] == "firmware update"
    assert bare["device_plugin"] == "own chart (DaemonSet kube-system/nvdp)"
    assert bare["dcgm_exporter"] == "unknown"
    aks = upgraded_by(node({"kubernetes.azure.com/agentpool": "nc"}, operator=False), (), [])
    assert aks["driver"] == "node image"
    operator = upgraded_by(node(), policy(driver={"enabled": True}), [DRIVER_POD])
    assert operator["driver"] == "GPU Operator"


BOTTLEROCKET = "Bottlerocket OS 1.26.2 (aws-k8s-1.31-nvidia)"
KARPENTER = {"karpenter.sh/nodepool": "gpu", "karpenter.k8s.aws/ec2nodeclass": "bottlerocket-gpu"}


def test_a_karpenter_bottlerocket_node_takes_a_newer_bottlerocket_release_not_an_eks_ami():
    # The nvidia variant carries the driver, the toolkit and the device plugin (a host
    # service, no pod): one change, the EC2NodeClass's Bottlerocket alias, moves all three.
    br = node(KARPENTER, operator=False, os_image=BOTTLEROCKET)
    paths = upgrade_paths(br, (), [])
    for component in ("driver", "container_toolkit", "device_plugin"):
        path = paths[component]
        assert (path.managed_by, path.change) == ("pre_installed", "node image"), component
        assert "EKS-optimized" not in path.how
        assert "amiSelectorTerms" in path.how and "bottlerocket@v<version>" in path.how
    assert "device plugin as a host service" in paths["device_plugin"].why
    assert upgraded_by(br, (), [])["device_plugin"] == "node image"


def test_a_bottlerocket_node_group_moves_its_ami_release():
    br = node({"eks.amazonaws.com/nodegroup": "gpu"}, operator=False, os_image=BOTTLEROCKET)
    how = upgrade_paths(br, (), [])["driver"].how
    assert "Bottlerocket AMI release version" in how and "EKS-optimized" not in how


def test_a_missing_plugin_pod_stays_unknown_off_bottlerocket_or_under_an_operator():
    # An AL2023 node with no plugin pod: nothing says who runs its plugin.
    al2023 = node({"eks.amazonaws.com/nodegroup": "gpu"}, operator=False, os_image="Amazon Linux")
    assert upgrade_paths(al2023, (), [])["device_plugin"].managed_by == "unknown"
    # An Operator that would deploy the plugin on the Bottlerocket node: its pod may be missing.
    br = node(KARPENTER, os_image=BOTTLEROCKET)
    assert upgrade_paths(br, policy(), [TOOLKIT])["device_plugin"].managed_by == "unknown"
    paths = upgrade_paths(br, policy(devicePlugin={"enabled": False}), [TOOLKIT])
    assert paths["device_plugin"].change == "node image"


@pytest.mark.parametrize(
    "image",
    [
        "nvcr.io/nvaie/vgpu-guest-driver-4:535.104.05-ubuntu22.04",
        "nvcr.io/nvidia/driver:550.90.07-ubuntu22.04",
    ],
)
def test_a_driver_pod_of_its_own_is_not_the_hosts_when_the_operator_skips_the_driver(image):
    """`driver.enabled: false` means the Operator installs no driver; a driver container
    running on the node anyway (NVAIE's guest driver DaemonSet, a chart of its own) is what
    moves the version, not the host's packages. It had read "pre-installed on the node": the
    fix told the platform to upgrade host packages the driver never came from."""
    pod = ds_pod("nvaie", "vgpu-guest-driver", image)
    path = upgrade_paths(node(), policy(driver={"enabled": False}), [TOOLKIT, pod])["driver"]
    assert path.managed_by == "own_deployment"
    assert path.change == "DaemonSet nvaie/vgpu-guest-driver"
    assert "driver.enabled is false" in path.why
