"""How a pod reaches NVIDIA GPUs, in the CEL of a policy pack (enforcement.rules): the
`containers` and `gpuPod` variables the pod rules read, and POD-011's condition on
NVIDIA_VISIBLE_DEVICES, which is built from the same pieces (what a GPU resource is, a DRA
claim, a fraction). PURE: strings, core CEL only (enforcement.rules says why)."""

from __future__ import annotations

from inventory.snapshot.pod_annotations import FRACTION_CONTAINER_ANNOTATION

# Every container a pod runs, init and debug ones included (VAP / Kyverno `variables`).
CONTAINERS = (
    "(has(object.spec.initContainers) ? object.spec.initContainers : [])"
    " + object.spec.containers"
    " + (has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers : [])"
)


# The Network Operator's NICs under NVIDIA's prefix (nvidia.com/mlnx_sriov_rdma, nvidia.com/
# hostdev, ...: inventory.snapshot.pods._NIC_WORDS): no GPU. A pod holding only one is no GPU
# pod (class-pool-placement) and allocates no GPU (no-visible-devices-without-gpu).
_NIC_RESOURCE = (
    "^nvidia[.]com/.*(rdma|sriov|hostdev|netdevice|mlnx|infiniband|(_|/)ib(_|$)|(_|/)vf(_|$))"
)


def _gpu_map(field: str) -> str:
    """Container `c` names an nvidia.com/ resource other than a NIC in `field`."""
    return (
        f"(has(c.resources) && has(c.resources.{field})"
        f" && c.resources.{field}.exists(k, k.startsWith('nvidia.com/')"
        f" && !k.matches('{_NIC_RESOURCE}')))"
    )


# KAI Scheduler / Run:ai ask for a fraction of a GPU by annotation (inventory.snapshot).
FRACTION_ANNOTATIONS = ("gpu-fraction", "gpu-memory")
_FRACTION_LIST = "[" + ", ".join(f"'{a}'" for a in FRACTION_ANNOTATIONS) + "]"
# Any such annotation, even blank: read by `gpuPod` and by SHARE-004's rule (enforcement.rules).
ANNOTATED_FRACTION = (
    f"(has(object.metadata.annotations) && {_FRACTION_LIST}"
    ".exists(a, a in object.metadata.annotations))"
)
# A pod with DRA claims: its devices come through CDI, and the CDI specs NVIDIA's tooling
# writes (the DRA driver's included) set NVIDIA_VISIBLE_DEVICES=void in their common edits,
# applied over the container's own env (posture.rules.env_holdings; POD-011 skips such a pod
# as a whole, and so does this). Admission cannot see which device class a claim names.
_CLAIMS = "(has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0)"


# `void`, `none` or empty, as POD-011 reads the value (posture.rules.pod.visible_devices:
# trimmed, any case). Core CEL has no lowerAscii() or trim() (Kubernetes' strings extension
# has them, cel-python does not), so a regex: RE2 (API server, Kyverno) and Python's re both
# take the scoped (?i:...) flag and \s; a raw CEL string keeps the backslashes as written.
VISIBLE_DEVICES_OFF = r"r'^\s*(?i:void|none)?\s*$'"


def _sets_visible_devices(c: str) -> str:
    """Container `c` sets NVIDIA_VISIBLE_DEVICES other than void/none/empty: literally, from a
    value admission cannot read (a Secret or ConfigMap key), or through envFrom from a
    ConfigMap the last sync saw setting it (posture.rules.pod.visible_devices reads it so)."""
    return (
        f"((has({c}.env) && {c}.env.exists(e, e.name == 'NVIDIA_VISIBLE_DEVICES'"
        f" && !(has(e.value) && e.value.matches({VISIBLE_DEVICES_OFF}))))"
        f" || (has({c}.envFrom) && {c}.envFrom.exists(f, has(f.configMapRef)"
        " && (!has(f.prefix) || f.prefix == '')"
        " && params.data.visibleDevicesConfigMaps.contains("
        f"',' + object.metadata.namespace + '/' + f.configMapRef.name + ','))))"
    )


# A pod that holds a GPU resource (an nvidia.com/ one other than a NIC) or a GPU fraction
# (inventory.snapshot.Pod.uses_gpu), or
# reaches the node's GPUs through NVIDIA_VISIBLE_DEVICES (DESIGN §2: every way counts, as
# posture.rules.dra_holdings.uses_gpu; admission cannot tell whether the node will honour it,
# so it counts: POD-009's placement holds where a POD-011 exemption lets such a pod in).
GPU_POD = (
    f"variables.containers.exists(c, {_gpu_map('limits')} || {_gpu_map('requests')}"
    f" || (!{_CLAIMS} && {_sets_visible_devices('c')}))"
    f" || {ANNOTATED_FRACTION}"
)

VARIABLES: tuple[tuple[str, str], ...] = (("containers", CONTAINERS), ("gpuPod", GPU_POD))


# A limit that allocates a GPU (posture.rules.pod.visible_devices.allocated_gpus): not one of
# the Network Operator's NICs under the same prefix (_NIC_RESOURCE), not a quantity of zero.
# Without one the variable is the container's only way to GPUs, and POD-011 fires on whatever
# GPU node the pod lands.
_ZERO = "^[+]?0*([.]0*)?[a-zA-Z]*$"
_GPU_LIMIT = (
    "(has(c.resources) && has(c.resources.limits) && c.resources.limits.exists(k,"
    f" k.startsWith('nvidia.com/') && !k.matches('{_NIC_RESOURCE}')"
    f" && !string(c.resources.limits[k]).matches('{_ZERO}')))"
)
# With a GPU limit the container's own value is admitted: whether it replaces the GPUs the
# device plugin allocated depends on the node's device-list strategy (the default `envvar`:
# yes; volume-mounts or CDI: no), and admission does not know the node a pod will run on.
# POD-011 judges it per node after scheduling (docs/enforcement.md).
# KAI's binder sets the variable in a fraction pod's fraction container, from its
# `<pod>-...-shared-gpu-N` ConfigMap, to the GPU the fraction's reservation holds: the pod's own
# GPU, not a bypass. POD-011 exempts that container alone (posture.rules.pod.visible_devices.
# judged_containers, Pod.fraction_container) and so does this, or the pack would deny every KAI
# fraction at admission; its other containers are judged. A fraction: a `gpu-fraction` or
# `gpu-memory` annotation that is not blank (Pod.gpu_fraction).
_BLANK = r"r'^\s*$'"
_ANNOTATIONS = "object.metadata.annotations"
_FRACTION_POD = (
    f"(has({_ANNOTATIONS}) && {_FRACTION_LIST}.exists(a, a in {_ANNOTATIONS}"
    f" && !{_ANNOTATIONS}[a].matches({_BLANK})))"
)
_NAMES_CONTAINER = (
    f"('{FRACTION_CONTAINER_ANNOTATION}' in {_ANNOTATIONS}"
    f" && !{_ANNOTATIONS}['{FRACTION_CONTAINER_ANNOTATION}'].matches({_BLANK}))"
)


def _fraction_container(c: str) -> str:
    """Container `c` is the fraction's: the one `gpu-fraction-container-name` names (trimmed,
    as the binder reads it), an app or init container, never a debug one; without that
    annotation the first app container. Container names are unique across all three lists
    and DNS labels (no regex metacharacter), so a name tells them apart."""
    named = (
        f"{_ANNOTATIONS}['{FRACTION_CONTAINER_ANNOTATION}'].matches("
        f"r'^\\s*' + {c}.name + r'\\s*$')"
        f" && (object.spec.containers.exists(x, x.name == {c}.name)"
        " || (has(object.spec.initContainers)"
        f" && object.spec.initContainers.exists(x, x.name == {c}.name)))"
    )
    first = f"size(object.spec.containers) > 0 && object.spec.containers[0].name == {c}.name"
    return f"({_FRACTION_POD} && ({_NAMES_CONTAINER} ? ({named}) : ({first})))"


# POD-011 (no-visible-devices-without-gpu): every container that sets the variable has a GPU
# limit, or the pod a DRA claim, or the container is a KAI fraction's own.
VISIBLE_DEVICES = (
    f"variables.containers.all(c, !{_sets_visible_devices('c')} || {_GPU_LIMIT} || {_CLAIMS}"
    f" || {_fraction_container('c')})"
)
