"""K8S-001: tenant namespaces whose GPU resources no ResourceQuota limits.

Kubernetes counts an extended resource against a quota only under `requests.<resource>` (the
pod evaluator computes no other key for it): a bare `nvidia.com/gpu` or `limits.nvidia.com/gpu`
in `spec.hard` is accepted and never enforced. So each GPU resource the namespace's pods
actually use (`nvidia.com/gpu`, `*.shared`, MIG profiles, names the device plugin's `rename`
advertises, HAMi's `nvidia.com/gpumem` / `gpucores` / `gpumem-percentage`, and other vendors'
GPUs: `amd.com/gpu`, `habana.ai/gaudi`, `gpu.intel.com/xe`, ...) needs its own `requests.`
key. HAMi's scheduler enforces its own counters under `limits.` too, and a HAMi counter rides
on the `nvidia.com/gpu` share each of its pods holds: where that count is bounded, so is what
the counters can take. A resource the namespace does not use yet is
unbounded all the same: a quota on `requests.nvidia.com/gpu` leaves the MIG slices or
`gpu.shared` replicas the cluster's nodes advertise free for the taking (a key absent from
`spec.hard` is no limit), so every GPU resource some node advertises needs its key too (`"0"`
where none is approved). Taints do not excuse one: the tolerations are the tenant's to write.
Where the snapshot's nodes show no GPU at all (no GPU node, no ResourceSlice publishing a GPU,
no pod holding one) there is nothing to bound: no finding (a CPU-only cluster is no quota gap).
With no node read, whether the cluster has GPUs is unknown: a namespace with no GPU pods needs
some enforced GPU key. KAI Scheduler fractions ask by annotation and are bounded by KAI's
queues, which no ResourceQuota can express: they are not judged here. Kueue is no quota either:
a ClusterQueue's nominalQuota bounds only workloads submitted through a LocalQueue (the
`kueue.x-k8s.io/queue-name` label the tenant writes), is shared by every namespace whose
LocalQueue points at it and lends through its cohort, so a tenant's pod without the label takes
GPUs Kueue never counts. DRA claims are bounded per device class by
`<class>.deviceclass.resource.k8s.io/devices` (the count of devices the namespace's claims of
that class request; adminAccess requests count too): each GPU device class the namespace's
pods' claims use needs its key.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from inventory.dra_devices import device_kind, gpu_classes_of_pod
from inventory.snapshot import GPU_RESOURCE_PREFIX, Namespace, Pod, PodScope, ResourceQuota
from inventory.snapshot.accelerators import is_judged_accelerator
from inventory.snapshot.pods import is_nic_resource
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import pod_ref
from posture.rules.dra_holdings import dra_index
from posture.rules.env_holdings import holds_through_env
from posture.rules.k8s.quota_scopes import counts_pod, scope_names, uncounted
from posture.rules.registry import DRA_KINDS, MEMBERS_SHOWN, FindingDraft, check
from posture.rules.subjects import namespace_draft
from tenants.policy import FRACTIONAL_RESOURCES

QUOTA_PREFIXES = ("requests.", "limits.")
REQUESTS = "requests."
# HAMi's scheduler also enforces its counters under `limits.` (its extended ResourceQuota).
HAMI_LIMIT_PREFIXES = ("limits.", "limit.")
BASELINE = "nvidia.com/gpu"
DRA_QUOTA_SUFFIX = ".deviceclass.resource.k8s.io/devices"


def is_gpu_quota_key(key: str) -> bool:
    """A quota key on an NVIDIA GPU resource (`requests.nvidia.com/gpu`, `nvidia.com/gpu`,
    `limits.nvidia.com/gpu`, `.shared`, MIG, renamed and HAMi resources)."""
    for prefix in QUOTA_PREFIXES:
        if key.startswith(prefix):
            key = key.removeprefix(prefix)
            break
    # A quota on the Network Operator's NICs (`requests.nvidia.com/hostdev`) bounds no GPU.
    return key.startswith(GPU_RESOURCE_PREFIX) and not is_nic_resource(key)


def enforces_a_gpu_key(key: str) -> bool:
    """A quota key Kubernetes (or HAMi) actually counts a GPU resource under: `requests.` of
    an NVIDIA resource, `limits.` of a HAMi counter, a DRA device-class key. A bare
    `nvidia.com/gpu` or `limits.nvidia.com/gpu` is accepted by the API and bounds nothing."""
    if key.endswith(DRA_QUOTA_SUFFIX):
        return True
    resource = next((key.removeprefix(p) for p in QUOTA_PREFIXES if key.startswith(p)), None)
    if resource is not None and is_judged_accelerator(resource):
        return key == REQUESTS + resource  # another vendor's GPU: an extended resource too
    if resource is None or not resource.startswith(GPU_RESOURCE_PREFIX):
        return False
    if is_nic_resource(resource):
        return False
    return key in enforcing_keys(resource)


def enforcing_keys(resource: str) -> tuple[str, ...]:
    """The quota keys that bound `resource`, the one to write first."""
    if resource.endswith(DRA_QUOTA_SUFFIX):
        return (resource, REQUESTS + resource)
    if resource in FRACTIONAL_RESOURCES and resource.startswith(GPU_RESOURCE_PREFIX):
        # HAMi's own counters only: Volcano's and Aliyun's are bounded by `requests.` alone.
        return (REQUESTS + resource, *(p + resource for p in HAMI_LIMIT_PREFIXES))
    return (REQUESTS + resource,)


@dataclass
class Usage:
    """One GPU resource used in a namespace, and the pods using it."""

    resource: str
    pods: list[str] = field(default_factory=list)
    # pod ref -> what scoped quotas match it by (None: not read), for the evidence.
    scopes: dict[str, PodScope | None] = field(default_factory=dict)

    def add(self, pod: Pod) -> None:
        self.pods.append(pod_ref(pod))
        self.scopes[pod_ref(pod)] = pod.quota_scope


def namespace_gpu_usage(inputs: PostureInputs) -> dict[str, dict[str, Usage]]:
    """namespace -> resource -> its use by the namespace's active pods (every nvidia.com/*
    resource a pod holds, and the other vendors' GPUs: Pod.accelerator_resources). DRA
    device-class quotas add their own resources here."""
    usage: dict[str, dict[str, Usage]] = {}
    for pod in sorted(inputs.snapshot.pods, key=pod_ref):
        # A KAI reservation pod holds a GPU for other namespaces' fractions: no one's use.
        if pod.is_active and not inputs.is_reservation(pod):
            _add_pod(usage, pod)
            if not any(entry.name for entry in pod.resource_claims):
                continue  # no claim of its spec's (a KEP-5004 claim is charged as its request)
            for device_class in gpu_classes_of_pod(dra_index(inputs), pod):
                resource = device_class + DRA_QUOTA_SUFFIX
                usage.setdefault(pod.namespace, {}).setdefault(resource, Usage(resource)).add(pod)
    return usage


def env_gpu_pods(inputs: PostureInputs) -> dict[str, list[str]]:
    """namespace -> its active pods that hold GPUs only through NVIDIA_VISIBLE_DEVICES (a
    GPU workload for this check as for every other, dra_holdings.uses_gpu, though no quota
    key can bound it)."""
    found: dict[str, list[str]] = {}
    for pod in sorted(inputs.snapshot.pods, key=pod_ref):
        if pod.is_active and holds_through_env(inputs, pod):
            found.setdefault(pod.namespace, []).append(pod_ref(pod))
    return found


def _add_pod(usage: dict[str, dict[str, Usage]], pod: Pod) -> None:
    # A request DRA serves (KEP-5004, Pod.dra_served) is held through a claim, but quota
    # admission charges it as the pod's spec writes it (`requests.nvidia.com/gpu`), before the
    # scheduler makes that claim: it is that resource's use here, as a device plugin's would be.
    served = {
        name
        for _, name in pod.dra_served
        if (name.startswith(GPU_RESOURCE_PREFIX) and not is_nic_resource(name))
        or is_judged_accelerator(name)
    }
    for resource in sorted(set(pod.accelerator_resources) | served):
        usage.setdefault(pod.namespace, {}).setdefault(resource, Usage(resource)).add(pod)


def advertised_gpu_resources(inputs: PostureInputs) -> list[str]:
    """The GPU resources some node of the cluster advertises (whole GPUs, replicas, MIG
    profiles, renamed resources, other vendors' GPUs), sorted; the Network Operator's NICs are
    none."""
    nvidia = {
        name
        for node in inputs.snapshot.nodes
        for name, count in node.gpu_capacity.items()
        if count > 0 and name.startswith(GPU_RESOURCE_PREFIX) and not is_nic_resource(name)
    }
    others = {
        name
        for node in inputs.snapshot.nodes
        for name, count in node.accelerator_resources.items()
        if count > 0 and is_judged_accelerator(name)
    }
    return sorted(nvidia | others)


@check(
    id="K8S-001",
    needs=DRA_KINDS,
    title="Tenant namespace without a ResourceQuota on the GPU resources it uses",
    severity="medium",
    scope="tenant",
    rationale=(
        "Without a quota on GPU resources one tenant can request every GPU (or every "
        "time-sliced replica) in the cluster and starve the others, and a compromised tenant "
        "account can turn the whole fleet to cryptomining. Quotas are also what makes a "
        "tenant's GPU allocation auditable against what was approved. A quota on "
        "`nvidia.com/gpu` does not bound `nvidia.com/gpu.shared`, a MIG profile, a renamed "
        "resource or another vendor's GPUs (`amd.com/gpu`, `habana.ai/gaudi`, "
        "`gpu.intel.com/xe`): each resource the tenant uses or the nodes advertise needs its "
        "own key (one left out of `spec.hard` is unlimited), and Kubernetes enforces extended "
        "resources only under `requests.`. A Kueue ClusterQueue is no quota: a pod without "
        "the queue-name label bypasses it."
    ),
    remediation=(
        "Create (or extend) a ResourceQuota in the namespace with one `spec.hard` entry per "
        'resource named in the evidence, e.g. `requests.nvidia.com/gpu: "<approved count>"`, '
        '`requests.nvidia.com/gpu.shared: "<replicas>"`, `requests.nvidia.com/mig-1g.10gb: '
        '"2"`, `requests.amd.com/gpu: "2"`, and per DRA device class '
        '`<class>.deviceclass.resource.k8s.io/devices: "2"`. '
        'A resource the nodes advertise that the tenant is not approved for gets `"0"`. '
        "Extended resources are quota'd by the `requests.` prefix only: a bare "
        "`nvidia.com/gpu` or `limits.nvidia.com/gpu` key is accepted and never enforced."
    ),
    mappings=("SP800-53:SC-6",),
)
def namespace_without_gpu_quota(inputs: PostureInputs) -> Iterator[FindingDraft]:
    by_namespace: dict[str, list[ResourceQuota]] = {}  # once, not a scan per namespace
    for quota in inputs.snapshot.quotas:
        by_namespace.setdefault(quota.namespace, []).append(quota)
    usage = namespace_gpu_usage(inputs)
    through_env = env_gpu_pods(inputs)
    advertised = advertised_gpu_resources(inputs)
    if not (advertised or usage or through_env) and no_gpu_seen(inputs):
        return  # a CPU-only cluster: no GPU for a quota to bound
    for namespace in _namespaces(inputs, (*usage, *through_env)):
        tenant = inputs.tenant_of_namespace(namespace.name)
        if tenant is None:
            continue
        used = usage.get(namespace.name, {})
        env_pods = through_env.get(namespace.name, [])
        if not (used or env_pods) and inputs.claimed_tenant_of_namespace(namespace.name) is None:
            continue  # an unclassified namespace matters once it takes GPUs (TEN-001)
        quotas = sorted(by_namespace.get(namespace.name, ()), key=lambda q: q.name)
        keys = {key for q in quotas for key in q.hard}
        wanted = {**{r: Usage(r) for r in advertised}, **used}
        if wanted:
            missing = [
                u
                for r, u in sorted(wanted.items())
                if _unbounded(quotas, enforcing_keys(r)) and not _rides_on_count(quotas, u, wanted)
            ]
        else:
            # No GPU pods yet: any enforced GPU key bounds what the tenant may start taking.
            enforced = [k for k in keys if enforces_a_gpu_key(k)]
            missing = [] if enforced and not uncounted(quotas, enforced) else [Usage(BASELINE)]
        if missing:
            yield _quota_draft(inputs, namespace, tenant, quotas, missing, bool(wanted), env_pods)


def _namespaces(inputs: PostureInputs, using: Iterable[str]) -> list[Namespace]:
    """The namespace objects, and the namespaces whose pods take GPUs though the export holds
    no object of them (`kubectl get` without namespaces): their pods show they exist, and a
    missing object must not resolve a missing quota."""
    found = {n.name: n for n in inputs.snapshot.namespaces}
    for name in using:
        found.setdefault(name, Namespace(name=name))
    return [found[name] for name in sorted(found)]


def no_gpu_seen(inputs: PostureInputs) -> bool:
    """The snapshot read nodes and shows no GPU on the cluster: no GPU node, no ResourceSlice
    publishing a GPU device, no pod holding one. With no node read it cannot tell (False)."""
    snapshot = inputs.snapshot
    if not snapshot.nodes:
        return False
    if any(node.is_accelerator_node for node in snapshot.nodes):
        return False
    if any(
        device_kind(s.driver, d.attributes, d.name) for s in snapshot.dra_slices for d in s.devices
    ):
        return False
    return not any(pod.uses_gpu or pod.accelerator_resources for pod in snapshot.pods)


def _rides_on_count(quotas: list[ResourceQuota], usage: Usage, wanted: dict[str, Usage]) -> bool:
    """A HAMi counter (`nvidia.com/gpumem`, `gpucores`, ...) every using pod also holds a
    bounded `nvidia.com/gpu` share with: HAMi's webhook adds the share to any pod asking for a
    counter alone, and one share holds at most one GPU's memory and cores, so the count's quota
    already bounds what the counters can take (their own keys only split it finer)."""
    if usage.resource not in FRACTIONAL_RESOURCES or not usage.resource.startswith(
        GPU_RESOURCE_PREFIX
    ):
        return False
    shares = wanted.get(BASELINE)
    if _unbounded(quotas, enforcing_keys(BASELINE)):
        return False
    return set(usage.pods) <= set(shares.pods if shares else ())


def _unbounded(quotas: list[ResourceQuota], keys: tuple[str, ...]) -> bool:
    """No quota holds any of `keys`, or scoped ones leave some pod the tenant may write out."""
    return not any(set(keys) & set(q.hard) for q in quotas) or uncounted(quotas, keys) is not None


def _quota_draft(
    inputs: PostureInputs,
    namespace: Namespace,
    tenant: TenantInfo,
    quotas: list[ResourceQuota],
    missing: list[Usage],
    any_wanted: bool,
    env_pods: list[str],
) -> FindingDraft:
    keys = {key for q in quotas for key in q.hard}
    evidence: dict[str, object] = {
        "namespace": namespace.name,
        "tenant": tenant.slug,
        "quotas": [_quota_entry(q) for q in quotas],
        "missing": [_missing_entry(u, keys, quotas) for u in missing],
        "basis": (
            "GPU resources the namespace's pods use and the cluster's nodes advertise"
            if any_wanted
            else "no GPU pods: no enforced quota key on any GPU resource"
        ),
    }
    if env_pods:
        # Its GPU pods all the same (dra_holdings.uses_gpu), but no quota key bounds them.
        evidence["gpu_access_outside_quota"] = {
            "pods": env_pods[:MEMBERS_SHOWN],
            "pod_count": len(env_pods),
            "why": (
                "GPUs taken through NVIDIA_VISIBLE_DEVICES, which no ResourceQuota counts: "
                "POD-011 names the change that ends it"
            ),
        }
    names = ", ".join(enforcing_keys(u.resource)[0] for u in missing)
    # Keys no quota holds, and keys held only by scoped quotas that leave some pod out.
    left_out = {u.resource: _left_out(quotas, u.resource) for u in missing}
    unheld = [enforcing_keys(r)[0] for r, pod in left_out.items() if pod is None]
    scoped = [(enforcing_keys(r)[0], pod) for r, pod in left_out.items() if pod is not None]
    parts = [f"no quota on {', '.join(unheld)}"] if unheld else []
    if scoped:
        held = ", ".join(key for key, _ in scoped)
        parts.append(
            f"no quota on {held} for every pod (scoped quotas do not count pods {scoped[0][1]})"
        )
    detail = "; ".join(parts)
    if not quotas:
        detail = f"no ResourceQuota (needs {names})" if any_wanted else "no ResourceQuota"
    return namespace_draft(
        "K8S-001",
        inputs,
        namespace.name,
        tenants=(tenant,),
        evidence=evidence,
        title=f"Namespace {namespace.name} of tenant {tenant.slug} has {detail}",
        exposure=sum(max(1, len(u.pods)) for u in missing),
    )


def _quota_entry(quota: ResourceQuota) -> dict[str, object]:
    entry: dict[str, object] = {"name": quota.name, "hard_keys": sorted(quota.hard)}
    if quota.scopes or quota.scope_selector:
        # It counts only the pods in its scope: the tenant decides which pods those are.
        entry["scopes"] = list(quota.scopes)
        entry["scope_selector"] = [dict(e) for e in quota.scope_selector]
    return entry


def _missing_entry(usage: Usage, keys: set[str], quotas: list[ResourceQuota]) -> dict[str, object]:
    entry: dict[str, object] = {
        "resource": usage.resource,
        "expected_key": enforcing_keys(usage.resource)[0],
        "pods": usage.pods[:MEMBERS_SHOWN],
        "pod_count": len(usage.pods),
        # No pod uses it yet: a node advertises it, so the tenant may start to.
        "in_use": bool(usage.pods),
        # Present, but Kubernetes never counts an extended resource under these.
        "unenforced_keys": sorted(
            k
            for k in (usage.resource, "limits." + usage.resource)
            if k in keys and k not in enforcing_keys(usage.resource)
        ),
        # Held by scoped quotas only: a pod they do not count (None when no quota holds it).
        "not_counted": _left_out(quotas, usage.resource),
    }
    if entry["not_counted"] is not None:
        entry.update(_pods_by_count(usage, quotas))
    return entry


def _pods_by_count(usage: Usage, quotas: list[ResourceQuota]) -> dict[str, list[str]]:
    """The listed pods split by whether the scoped quotas count them: `not_counted` names a
    kind of pod that escapes them, not these pods, some of which may well be counted."""
    keys = enforcing_keys(usage.resource)
    split: dict[str, list[str]] = {"pods_counted": [], "pods_not_counted": []}
    for ref in usage.pods[:MEMBERS_SHOWN]:
        counted = counts_pod(quotas, keys, usage.scopes.get(ref))
        if counted is None:
            # Read before its scope facts were kept: which side it is on is not known.
            split.setdefault("pods_scope_unknown", []).append(ref)
        else:
            split["pods_counted" if counted else "pods_not_counted"].append(ref)
    return split


def _left_out(quotas: list[ResourceQuota], resource: str) -> str | None:
    keys = enforcing_keys(resource)
    if not any(set(keys) & set(q.hard) for q in quotas):
        return None
    pod = uncounted(quotas, keys)
    return pod.describe(scope_names(quotas)) if pod else None
