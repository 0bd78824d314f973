"""TEN-001: a GPU workload in a namespace no tenant claims and the platform does not own.

Such a namespace is unclassified (DESIGN §3): its pods are judged as the system tenant
`unclassified` under GPUPOSTURE_UNCLASSIFIED_CLASS by every other check; this one names the
cause itself, once per namespace, so claiming it (or listing it as the platform's) closes it."""

from __future__ import annotations

from collections.abc import Iterator

from inventory.snapshot import Pod
from posture.inputs import PostureInputs
from posture.rules.common import pod_ref
from posture.rules.dra_holdings import uses_accelerator
from posture.rules.env_holdings import env_reach
from posture.rules.registry import MEMBERS_SHOWN, FindingDraft, check
from posture.rules.subjects import namespace_draft
from posture.rules.ten.owner_hints import owner_hints


def unclassified_gpu_pods(inputs: PostureInputs) -> dict[str, list[Pod]]:
    """namespace -> its active GPU pods, for each unclassified namespace holding one (a GPU
    resource of any name and vendor, a fraction, a DRA claim of a GPU class; reservation
    placeholders left out)."""
    found: dict[str, list[Pod]] = {}
    for pod in inputs.snapshot.pods:
        if not pod.is_active or not uses_accelerator(inputs, pod):
            continue
        tenant = inputs.tenant_of_pod(pod)
        if tenant is not None and tenant.slug == inputs.unclassified.slug:
            found.setdefault(pod.namespace, []).append(pod)
    return {ns: sorted(pods, key=pod_ref) for ns, pods in sorted(found.items())}


def unclassified_gpu_templates(inputs: PostureInputs) -> dict[str, list[Pod]]:
    """namespace -> the GPU pod templates of its workloads with no pod running (a CronJob
    between runs, a suspended Job, a Deployment scaled to 0), for each unclassified namespace:
    a GPU workload nobody owns is one whether or not its pods run at this sync. A Job with no
    pod that is not suspended (Kueue's queued Jobs are) has finished: it takes no GPU again."""
    found: dict[str, list[Pod]] = {}
    for pod, tenant in inputs.template_pods:
        if tenant.slug != inputs.unclassified.slug or not uses_accelerator(inputs, pod):
            continue
        workload = inputs.template_workload(pod)
        if workload is not None and workload.kind == "Job" and not workload.suspended:
            continue
        found.setdefault(pod.namespace, []).append(pod)
    return found


@check(
    id="TEN-001",
    needs=("Namespace", "ResourceClaim"),
    title="GPU workload in a namespace no tenant owns",
    severity="high",
    scope="tenant",
    rationale=(
        "Every GPU workload must belong to someone whose trust class says how it may share "
        "GPUs. A namespace no tenant claims and that is not a platform namespace has no owner, "
        "no class and no approvals: nobody answers for its pods, its quota or its neighbours. "
        "gpuposture judges such pods under the strictest class (GPUPOSTURE_UNCLASSIFIED_CLASS, "
        "`external` by default) rather than trusting them as the platform, and names the "
        "namespace here so that someone takes ownership. A GPU workload is one holding GPUs of "
        "any vendor: `amd.com/gpu`, `habana.ai/gaudi` or `gpu.intel.com/xe` as much as "
        "`nvidia.com/gpu`."
    ),
    remediation=(
        "Claim the namespace for the tenant that runs it: add it to that tenant's `namespaces` "
        "in the tenants file (`manage.py apply_tenants`), or label it "
        "`gpuposture.io/tenant: <slug>`. If it is the platform team's own, label it "
        '`gpuposture.io/platform: "true"` or list it in GPUPOSTURE_PLATFORM_NAMESPACES, then '
        "re-sync."
    ),
    mappings=("SP800-53:CM-8", "SP800-53:AC-2"),
)
def gpu_workload_in_unclassified_namespace(inputs: PostureInputs) -> Iterator[FindingDraft]:
    party = inputs.unclassified
    running = unclassified_gpu_pods(inputs)
    idle = unclassified_gpu_templates(inputs)
    for namespace in sorted(set(running) | set(idle)):
        pods, templates = running.get(namespace, []), idle.get(namespace, [])
        workloads = sorted({inputs.workload_of(p).ref() for p in [*pods, *templates]})
        evidence = {
            "namespace": namespace,
            "tenant": party.slug,
            "judged_as_class": party.trust_class.slug,
            "namespace_labels": _labels(inputs, namespace),
            "workloads": workloads[:MEMBERS_SHOWN],
            "gpu_pods": [_pod_entry(inputs, p) for p in pods[:MEMBERS_SHOWN]],
            "gpu_pod_count": len(pods),
        }
        labels = evidence["namespace_labels"]
        read = _labels_read(inputs, namespace)
        if not read:
            # No Namespace object: a tenant may claim it by label, the platform by its label.
            evidence["namespace_labels"] = "unknown"
            evidence["owner"] = (
                "unknown: the namespace's labels were not read (no Namespace object in the "
                "sync), so a tenant or the platform may claim it by label"
            )
            labels = {}
        if hints := owner_hints(labels, inputs.namespace_owner, {t.slug for t in inputs.tenants}):
            evidence["owner_hints"] = hints
        if templates:
            evidence["gpu_workloads_with_no_pod_running"] = sorted(
                inputs.workload_of(p).ref() for p in templates
            )[:MEMBERS_SHOWN]
        what = (
            f"runs {len(pods)} GPU pod(s)"
            if pods
            else f"has {len(templates)} GPU workload(s) with no pod running now"
        )
        owner = "no tenant owns it" if read else "its labels were not read, so its owner is unknown"
        title = f"Namespace {namespace} {what} and {owner} (judged as {party.trust_class.slug})"
        yield namespace_draft(
            "TEN-001",
            inputs,
            namespace,
            tenants=(party,),
            evidence=evidence,
            title=title,
            exposure=len(workloads),
        )


def _labels(inputs: PostureInputs, namespace: str) -> dict[str, str]:
    """The namespace's labels: why no tenant label or platform label claimed it."""
    return next((dict(n.labels) for n in inputs.snapshot.namespaces if n.name == namespace), {})


def _labels_read(inputs: PostureInputs, namespace: str) -> bool:
    """Whether the sync read the namespace's object (its labels may claim it)."""
    return any(n.name == namespace for n in inputs.snapshot.namespaces)


def _pod_entry(inputs: PostureInputs, pod: Pod) -> dict[str, object]:
    entry: dict[str, object] = {"pod": pod_ref(pod), "node": pod.node_name}
    if held := pod.accelerator_resources:
        entry["gpu_resources"] = dict(sorted(held.items()))
    if pod.gpu_fraction:
        entry["gpu_fraction"] = pod.gpu_fraction
    # A pod with neither may hold GPUs through NVIDIA_VISIBLE_DEVICES: say how, as POD-009 does.
    if reach := env_reach(inputs, pod):
        entry["gpu_access_through_visible_devices"] = reach
    return entry
