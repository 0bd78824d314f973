"""POD-009..011: where tenant GPU pods run, under which identity, and GPU access that
bypasses the scheduler (DESIGN §2, §3, §5). Platform pods never count."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.snapshot import Container, Node, Pod
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import container_path, pod_draft, pod_ref, tenant_pods
from posture.rules.registry import FindingDraft, check
from tenants.mapping import TENANT_LABEL

CLASS_TAINT_KEY = "gpuposture.io/trust-class"
SEPARATING_EFFECTS = ("NoSchedule", "NoExecute")


def _nodes(inputs: PostureInputs) -> dict[str, Node]:
    return {n.name: n for n in inputs.snapshot.nodes}


# --- POD-009 -------------------------------------------------------------------------------


def has_class_taint(node: Node, class_slug: str) -> bool:
    return any(
        t.key == CLASS_TAINT_KEY and t.value == class_slug and t.effect in SEPARATING_EFFECTS
        for t in node.taints
    )


@check(
    id="POD-009",
    title="GPU pod of a dedicated-pool tenant scheduled outside its class's tainted pool",
    severity="high",
    scope="tenant",
    rationale=(
        "External and sensitive tenants require a dedicated node pool (DESIGN §3): nodes "
        "tainted `gpuposture.io/trust-class=<class>` with NoSchedule or NoExecute, so only "
        "that class's pods run there. A GPU pod of such a tenant on a node without that taint "
        "shares the node's kernel, container runtime, GPU driver and (depending on the sharing "
        "mode) GPUs with whatever else is scheduled there, which is exactly what the "
        "dedicated pool exists to prevent. It usually means a missing nodeSelector, a "
        "toleration broad enough to land anywhere, or a pool that lost its taint."
    ),
    remediation=(
        "Taint the class's pool (`kubectl taint nodes <node> "
        "gpuposture.io/trust-class=<class>:NoSchedule`, set in the node pool configuration so "
        "new nodes get it), give the tenant's workloads that toleration and a nodeSelector "
        "`gpuposture.io/trust-class: <class>` (or node affinity), remove tolerations with "
        "`operator: Exists` and no key, and delete the pod named in the evidence so it is "
        "rescheduled inside the pool. Enforce the nodeSelector with an admission policy."
    ),
    mappings=("SP800-53:SC-39",),
)
def gpu_pod_outside_class_pool(inputs: PostureInputs) -> Iterator[FindingDraft]:
    nodes = _nodes(inputs)
    for pod, tenant in tenant_pods(inputs):
        cls = tenant.trust_class
        node = nodes.get(pod.node_name or "")
        # An unscheduled pod, or a node outside the snapshot, cannot be judged.
        if not cls.requires_dedicated_pool or node is None or not pod.gpu_resources:
            continue
        if has_class_taint(node, cls.slug):
            continue
        yield _pool_draft(pod, tenant, node)


def _pool_draft(pod: Pod, tenant: TenantInfo, node: Node) -> FindingDraft:
    slug = tenant.trust_class.slug
    evidence = {
        "gpu_resources": pod.gpu_resources,
        "node_taints": [f"{t.key}={t.value}:{t.effect}" for t in node.taints],
        "expected_taint": f"{CLASS_TAINT_KEY}={slug}:NoSchedule (or NoExecute)",
        "node_class_label": node.labels.get(CLASS_TAINT_KEY),
        "node_selector": dict(pod.node_selector),
        "tolerations": [dict(t) for t in pod.tolerations],
    }
    title = (
        f"GPU pod {pod_ref(pod)} of {slug} tenant {tenant.slug} runs on node {node.name}, "
        f"outside the {slug} pool"
    )
    return pod_draft("POD-009", pod, tenant, evidence, title=title)


# --- POD-010 -------------------------------------------------------------------------------

PLATFORM_PARTY = ""  # pods of a platform namespace that carry no tenant label


def job_tenant(inputs: PostureInputs, pod: Pod) -> str:
    """Whose work a GPU pod is: the namespace's tenant; in a namespace no tenant owns, the
    tenant its `gpuposture.io/tenant` label names (a shared submission system such as a
    batch or notebook service runs several tenants' jobs there); else the platform ("")."""
    owner = inputs.tenant_of_pod(pod)
    if owner is not None:
        return owner.slug
    label = pod.labels.get(TENANT_LABEL, "")
    return label if label in inputs.tenants_by_slug else PLATFORM_PARTY


def gpu_pods_by_identity(inputs: PostureInputs) -> dict[tuple[str, str], dict[str, list[Pod]]]:
    """(namespace, service account) -> party -> active GPU pods running as it."""
    groups: dict[tuple[str, str], dict[str, list[Pod]]] = {}
    for pod in sorted(inputs.snapshot.pods, key=pod_ref):
        if not pod.is_active or not pod.gpu_resources:
            continue
        parties = groups.setdefault((pod.namespace, pod.service_account), {})
        parties.setdefault(job_tenant(inputs, pod), []).append(pod)
    return dict(sorted(groups.items()))


@check(
    id="POD-010",
    title="GPU workloads of several tenants run under one shared service account",
    severity="medium",
    scope="tenant",
    rationale=(
        "Every job must map to a tenant identity (DESIGN §2). Tenancy follows the namespace, "
        "so the case that breaks it is a shared namespace: a batch, pipeline or notebook "
        "service that runs every tenant's GPU pods (told apart only by a "
        "`gpuposture.io/tenant` pod label) under its own ServiceAccount. The pods of one "
        "ServiceAccount are grouped by the tenant they work for; when a group spans several "
        "tenants, or a tenant's GPU work runs in a namespace no tenant owns, each tenant can "
        "use the other's credentials, volumes and API permissions, and audit logs and GPU "
        "usage name the shared identity instead of the tenant."
    ),
    remediation=(
        "Run each tenant's GPU jobs in a namespace the tenant owns, under a ServiceAccount of "
        "that namespace (`kubectl create serviceaccount <tenant>-jobs -n <tenant-namespace>` "
        "and set `spec.serviceAccountName`), and configure the submission system to "
        "impersonate the tenant's identity instead of using its own. Set "
        "`automountServiceAccountToken: false` where the job needs no API access."
    ),
    mappings=("SP800-53:AC-2", "SP800-53:AU-10"),
)
def shared_service_account(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for (namespace, account), parties in gpu_pods_by_identity(inputs).items():
        tenants = sorted(p for p in parties if p != PLATFORM_PARTY)
        platform_namespace = inputs.tenant_of_namespace(namespace) is None
        if not tenants or (len(parties) < 2 and not platform_namespace):
            continue
        for slug in tenants:
            yield _account_draft(namespace, account, slug, parties, platform_namespace)


def _pod_list(pods: list[Pod]) -> list[dict[str, Any]]:
    return [{"pod": pod_ref(p), "node": p.node_name, "gpu": p.gpu_resources} for p in pods]


def _account_draft(
    namespace: str,
    account: str,
    slug: str,
    parties: dict[str, list[Pod]],
    platform_namespace: bool,
) -> FindingDraft:
    own = parties[slug]
    others = {p or "platform": pods for p, pods in sorted(parties.items()) if p != slug}
    evidence = {
        "service_account": f"{namespace}/{account}",
        "field": "spec.serviceAccountName",
        "namespace_owner": None if platform_namespace else slug,
        "tenant": slug,
        "tenant_pods": _pod_list(own),
        "other_parties": {party: _pod_list(pods) for party, pods in others.items()},
    }
    shared_with = ", ".join(others) or "the platform's namespace"
    common = set.intersection(*(set(p.labels.items()) for p in own))
    return FindingDraft(
        check_id="POD-010",
        tenant=slug,
        subject_kind="ServiceAccount",
        subject_namespace=namespace,
        subject_name=account,
        evidence=evidence,
        title=(
            f"GPU pods of tenant {slug} run as service account {namespace}/{account}, "
            f"shared with {shared_with}"
        ),
        subject_labels=dict(sorted(common)),
    )


# --- POD-011 -------------------------------------------------------------------------------

VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
VISIBLE_DEVICES_OFF = ("", "void", "none")


def visible_devices_env(container: Container, path: str) -> dict[str, Any] | None:
    """The container's NVIDIA_VISIBLE_DEVICES if it asks for devices; a value from a
    reference cannot be read here and counts as asking."""
    for index, var in enumerate(container.env):
        if var.name != VISIBLE_DEVICES:
            continue
        if var.value is not None and var.value.strip().lower() in VISIBLE_DEVICES_OFF:
            return None
        return {
            "field": f"{path}.env[{index}]",
            "value": var.value,
            "value_from": var.value_from,
        }
    return None


@check(
    id="POD-011",
    title="Container reaches GPUs through NVIDIA_VISIBLE_DEVICES without requesting one",
    severity="high",
    scope="tenant",
    rationale=(
        "The NVIDIA Container Toolkit injects the GPUs named in NVIDIA_VISIBLE_DEVICES into "
        "any container on the node unless it is configured to ignore the variable for "
        "unprivileged containers. A container that sets it (e.g. `all` or a GPU index) "
        "without requesting an `nvidia.com/*` resource gets GPUs the scheduler never "
        "allocated: outside quota and accounting, on devices allocated to other tenants, and "
        "invisible to attribution (a compute-hijacking path, T1496.001). Platform pods are "
        "exempt by design (the device plugin and DCGM-Exporter set it legitimately); images "
        "that set it in their own ENV are not visible to the API and need the toolkit "
        "setting below."
    ),
    remediation=(
        "Remove NVIDIA_VISIBLE_DEVICES from the container at the field in the evidence (or "
        "set it to `void`) and request GPUs through `resources.limits` (`nvidia.com/gpu` or "
        "a MIG resource). On every GPU node set "
        "`accept-nvidia-visible-devices-envvar-when-unprivileged = false` in "
        "/etc/nvidia-container-runtime/config.toml (GPU Operator: "
        "`toolkit.env` ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false with the "
        "device plugin's `deviceListStrategy: volume-mounts` or CDI)."
    ),
    mappings=("SP800-53:AC-3", "ATT&CK:T1496.001"),
)
def visible_devices_without_request(inputs: PostureInputs) -> Iterator[FindingDraft]:
    nodes = _nodes(inputs)
    for pod, tenant in tenant_pods(inputs):
        node = nodes.get(pod.node_name or "")
        if node is None or not node.is_gpu_node:
            continue
        for container in pod.containers:
            if container.gpu_requests or container.gpu_limits:
                continue  # the device plugin allocated GPUs and sets the variable itself
            found = visible_devices_env(container, container_path(pod, container))
            if found is None:
                continue
            evidence = {
                "container": container.name,
                "init_container": container.init,
                "image": container.image,
                **found,
                "gpu_requests": {},
                "gpu_limits": {},
                "node_gpu_model": node.gpu_model,
                "node_gpu_count": node.gpu_count,
            }
            title = (
                f"Container {container.name} of pod {pod_ref(pod)} sets {VISIBLE_DEVICES} "
                f"without requesting a GPU on node {node.name}"
            )
            yield pod_draft("POD-011", pod, tenant, evidence, key=container.name, title=title)
