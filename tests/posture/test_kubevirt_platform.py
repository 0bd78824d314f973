"""KubeVirt's and CDI's own namespaces are the platform's as found (DESIGN §3), as the GPU and
Network Operators' are: by the operator Deployment's image with its ClusterRoleBinding or its
operands beside it, never by the namespace's name (fail closed). The VMs, virt-launcher pods in
their owners' namespaces, stay their owners'. Objects as `kubectl get -o json` prints them (our
own, spelled as KubeVirt's and CDI's release manifests and OpenShift Virtualization create
them)."""

from __future__ import annotations

from typing import Any

from posture.inputs import PostureInputs
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, namespace, node, pod, run, world

VMS = tenant("vms", "external", namespaces=("team-vm",))
KV = "quay.io/kubevirt/"
CNV = "registry.redhat.io/container-native-virtualization/"
POD_CHECKS = ("POD-001", "POD-002", "POD-003", "POD-005", "POD-007")
# Some ClusterRoleBinding was read (the GPU Operator's), none of KubeVirt's: its operands must
# place it, as in a snapshot whose RBAC was read but not KubeVirt's binding.
GPU_OPERATOR_BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "gpu-operator"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "x"},
    "subjects": [{"kind": "ServiceAccount", "name": "gpu-operator", "namespace": "gpu-operator"}],
}


def _binding(name: str, ns: str) -> dict[str, Any]:
    """The ClusterRoleBinding KubeVirt's (CDI's) manifest gives its operator's service account."""
    subject = {"kind": "ServiceAccount", "name": name, "namespace": ns}
    return {**GPU_OPERATOR_BINDING, "metadata": {"name": name}, "subjects": [subject]}


def _workload(kind: str, ns: str, name: str, image: str, **fields: Any) -> dict[str, Any]:
    spec = {"serviceAccountName": name, "containers": [container(name, image, **fields)]}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": ns, "uid": f"{kind}-{ns}-{name}"},
        "spec": {"template": {"metadata": {"labels": {"kubevirt.io": name}}, "spec": spec}},
    }


def _handler(ns: str, image: str = KV + "virt-handler:v1.3.1") -> list[dict[str, Any]]:
    """virt-handler as virt-operator creates it: a privileged DaemonSet with /dev mounted (it
    runs each VM's host side), and its pod on the GPU node."""
    privileged = {
        "securityContext": {"privileged": True},
        "volumeMounts": [{"name": "dev", "mountPath": "/dev"}],
    }
    ds = _workload("DaemonSet", ns, "virt-handler", image, **privileged)
    ds["spec"]["template"]["spec"]["volumes"] = [{"name": "dev", "hostPath": {"path": "/dev"}}]
    meta = ds["metadata"]
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": meta["name"], "uid": meta["uid"]}
    handler_pod = pod(ns, "virt-handler-x1", node_name="gpu-a", **ds["spec"]["template"]["spec"])
    handler_pod["metadata"]["ownerReferences"] = [owner]
    return [ds, handler_pod]


def _kubevirt(ns: str = "kubevirt", registry: str = KV, suffix: str = ":v1.3.1"):
    return [
        _workload("Deployment", ns, "virt-operator", registry + "virt-operator" + suffix),
        _workload("Deployment", ns, "virt-api", registry + "virt-api" + suffix),
        _workload("Deployment", ns, "virt-controller", registry + "virt-controller" + suffix),
    ]


def _vm() -> dict[str, Any]:
    """A VM: its virt-launcher pod in its owner's namespace, privileged as KubeVirt runs none,
    so that the check shows whose it is."""
    launcher = container(
        "compute", KV + "virt-launcher:v1.3.1", securityContext={"privileged": True}
    )
    return pod("team-vm", "virt-launcher-vm1-abcde", launcher)


def _world(*objects: dict[str, Any]) -> PostureInputs:
    base = [node("gpu-a"), namespace("team-vm"), namespace("kubevirt"), GPU_OPERATOR_BINDING]
    return world([*base, *objects], (VMS,))


def _found(inputs: PostureInputs, ns: str) -> set[str]:
    return {c for c in POD_CHECKS if any(d.subject_namespace == ns for d in run(c, inputs))}


def test_kubevirts_namespace_is_the_platforms_by_its_operator_binding():
    inputs = _world(*_kubevirt(), *_handler("kubevirt"), _binding("kubevirt-operator", "kubevirt"))
    assert "kubevirt" in inputs.platform_namespaces
    # virt-handler is KubeVirt's, privileged by design: no POD-001 critical as an unclassified
    # tenant's, and nothing else of the checks that judge tenants' pods.
    assert _found(inputs, "kubevirt") == set()


def test_kubevirts_namespace_is_the_platforms_by_its_operands():
    inputs = _world(*_kubevirt(), *_handler("kubevirt"))  # RBAC read, KubeVirt's binding absent
    assert "kubevirt" in inputs.platform_namespaces
    assert _found(inputs, "kubevirt") == set()


def test_openshift_virtualization_and_its_cdi_by_red_hats_images():
    """OpenShift Virtualization: KubeVirt and CDI in `openshift-cnv`, Red Hat's builds pinned
    by digest; CDI alone (its operator and operand Deployments) places the namespace."""
    digest = "@sha256:" + "7" * 64
    cnv = [
        namespace("openshift-cnv"),
        *_kubevirt("openshift-cnv", CNV, "-rhel9" + digest),
        *_handler("openshift-cnv", CNV + "virt-handler-rhel9" + digest),
    ]
    operator, controller = (f"{CNV}virt-cdi-{n}-rhel9{digest}" for n in ("operator", "controller"))
    cdi = [
        namespace("cdi"),
        _workload("Deployment", "cdi", "cdi-operator", operator),
        _workload("Deployment", "cdi", "cdi-deployment", controller),
    ]
    inputs = _world(*cnv, *cdi)
    assert {"openshift-cnv", "cdi"} <= inputs.platform_namespaces
    assert _found(inputs, "openshift-cnv") == set()


def test_upstream_cdi_by_its_operator_binding():
    cdi = [
        namespace("cdi"),
        _workload("Deployment", "cdi", "cdi-operator", KV + "cdi-operator:v1.59.0"),
        _binding("cdi-operator", "cdi"),
    ]
    assert "cdi" in _world(*cdi).platform_namespaces


def test_the_vms_stay_their_owners():
    inputs = _world(*_kubevirt(), *_handler("kubevirt"), _vm())
    assert "team-vm" not in inputs.platform_namespaces
    (draft,) = [d for d in run("POD-001", inputs) if d.subject_namespace == "team-vm"]
    assert draft.tenants == ("vms",)


def test_a_namespace_named_kubevirt_with_other_workloads_stays_unclassified():
    """Fail closed: `kubevirt` holding a privileged DaemonSet of KubeVirt's own image but no
    operator, and virt-operator's image run alone where RBAC was read and binds it nowhere, or
    beside a miner only, place nothing."""
    miner = _workload("DaemonSet", "scratch", "miner", "docker.io/evil/miner:1")
    inputs = _world(
        *_handler("kubevirt"),
        namespace("scratch"),
        _workload("Deployment", "scratch", "virt-operator", KV + "virt-operator:v1.3.1"),
        miner,
    )
    assert not {"kubevirt", "scratch"} & inputs.platform_namespaces
    assert _found(inputs, "kubevirt") >= {"POD-001", "POD-003"}
    # KubeVirt's operator image from anyone else's repository is not KubeVirt's either.
    fake = _workload("Deployment", "kubevirt", "virt-operator", "docker.io/x/virt-operator:v1")
    assert "kubevirt" not in _world(*_handler("kubevirt"), fake).platform_namespaces
