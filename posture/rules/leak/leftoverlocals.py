"""LEAK-002: GPUs affected by LeftoverLocals (VU#446598) shared between tenants."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from inventory.dra_devices import AMD_DRIVER
from inventory.snapshot import Node, Pod
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import path_within, sorted_nodes
from posture.rules.dra_holdings import dra_holdings
from posture.rules.holding import GpuHolding
from posture.rules.pod.host_areas import canonical_host_path
from posture.rules.pod.host_paths import node_path_of
from posture.rules.registry import DRA_KINDS, FindingDraft, check
from posture.rules.share.groups import shared_groups
from posture.rules.subjects import node_draft

# LeftoverLocals, CERT/CC VU#446598 (CVE-2023-4969): GPU local memory is not cleared between
# kernels, so one process can read what another left there. The advisory lists GPUs of AMD
# (Radeon and Instinct lines, AMD-SB-6010), Apple (M1/M2, A-series before A17), Qualcomm
# (Adreno) and Imagination (PowerVR) as affected; NVIDIA, Intel and Arm GPUs are not.
LEFTOVERLOCALS_AFFECTED: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("AMD", re.compile(r"\bamd\b|\bradeon\b|\binstinct\b|\bmi\s?\d{2,3}[a-z]*\b")),
    ("Apple", re.compile(r"\bapple\b.*\b(m1|m2|a1[456])\b")),
    ("Qualcomm", re.compile(r"\bqualcomm\b|\badreno\b")),
    ("Imagination", re.compile(r"\bimagination\b|\bpowervr\b")),
)
NOT_AFFECTED = re.compile(r"\bnvidia\b|\bintel\b|\barm\b|\bmali\b")
# Where the model is written: GFD's product (Node.gpu_model) and the AMD GPU labeller's labels.
AMD_MODEL_LABELS = (
    "amd.com/gpu.product-name",
    "beta.amd.com/gpu.product-name",
    "amd.com/gpu.family",
    "beta.amd.com/gpu.family",
)
AMD_LABEL_PREFIXES = ("amd.com/gpu", "beta.amd.com/gpu")
AMD_POOL_PREFIX = "amd.com/"  # posture.rules.dra_holdings.held_pool of AMD's DRA devices


def _words(text: str) -> str:
    return re.sub(r"[_\-/.,]+", " ", text).lower()


def leftoverlocals_match(node: Node, dra_products: Sequence[str] = ()) -> dict[str, Any] | None:
    """What identifies the node's GPUs as affected by VU#446598, or None. `dra_products`: the
    productName of the AMD devices its ResourceSlices publish (a DRA-only node may carry no
    AMD labeller labels)."""
    sources = (
        [("gpu_model", node.gpu_model)]
        + [(f"labels[{key}]", node.labels.get(key)) for key in AMD_MODEL_LABELS]
        + [(f"ResourceSlice {AMD_DRIVER} productName", p) for p in dra_products]
    )
    for where, value in sources:
        if not value or NOT_AFFECTED.search(_words(value)):
            continue
        for vendor, pattern in LEFTOVERLOCALS_AFFECTED:
            if pattern.search(_words(value)):
                return {"vendor": vendor, "source": where, "model": value}
    # The AMD labeller encodes some values in the key ("beta.amd.com/gpu.family.AI": "1").
    amd_keys = sorted(k for k in node.labels if k.startswith(AMD_LABEL_PREFIXES))
    if amd_keys:
        return {"vendor": "AMD", "source": f"labels[{amd_keys[0]}]", "model": None}
    if dra_products:  # AMD's DRA driver publishes AMD GPUs only, whatever their name says
        return {"vendor": "AMD", "source": f"ResourceSlice {AMD_DRIVER}", "model": None}
    # AMD's device plugin advertises AMD GPUs only: with the labeller off (or never deployed)
    # the model is unknown, and AMD-SB-6010 lists most Instinct and Radeon lines as affected,
    # so the GPUs cannot be ruled out. Said so rather than passed over.
    amd_resources = sorted(r for r in node.accelerator_resources if r.startswith(AMD_POOL_PREFIX))
    if amd_resources:
        return {
            "vendor": "AMD",
            "source": f"capacity[{amd_resources[0]}]",
            "model": None,
            "model_unknown": (
                "no label names the model (the AMD node labeller's amd.com/gpu.* labels are "
                "absent); AMD-SB-6010 lists most AMD Instinct and Radeon GPUs as affected, so "
                "whether these are is unknown"
            ),
        }
    return None


def amd_dra_products(inputs: PostureInputs, node: Node) -> list[str]:
    """The productName of each AMD device the node's ResourceSlices publish ("" for none)."""
    return sorted(
        {
            d.attributes.get("productName", "")
            for s in inputs.snapshot.dra_slices
            if s.driver == AMD_DRIVER and s.node_name == node.name
            for d in s.devices
        }
    )


@check(
    id="LEAK-002",
    needs=DRA_KINDS,
    title="GPU model affected by LeftoverLocals (VU#446598) shared between tenants",
    severity="high",
    scope="node",
    rationale=(
        "LeftoverLocals (CERT/CC VU#446598, CVE-2023-4969) lets a kernel read the GPU local "
        "memory another process's kernel left behind, on some AMD, Apple, Qualcomm and "
        "Imagination GPUs (not NVIDIA). Fragments of a neighbour's model weights, prompts "
        "and outputs can be reconstructed this way, whether the tenants run concurrently or "
        "one after the other on the same GPU. Whole GPUs that the vendor's device plugin "
        "allocates (`amd.com/gpu`) are each one tenant's: they are shared where a tenant's pod "
        "reaches every GPU of the node outside the plugin (privileged, or a hostPath over "
        "/dev) beside another tenant's pods, or where AMD's DRA driver (`gpu.amd.com`) "
        "gives one device to pods of two tenants (a claim they share, a device allocated "
        "to several claims, a tenant's adminAccess claim). Compute partitions of one GPU "
        "(an MI300X in CPX, DPX or QPX mode) are not whole GPUs: tenants holding them may "
        "share one, which the API does not show (certainly where AMD's DRA driver names the "
        "same parent GPU for both, not at all where it names different ones: they meet as "
        "SHARE-002 judges them). Only tenants whose GPUs meet another tenant's are named: "
        "one whose devices meet no one's is not, whoever else shares a GPU on the node. The "
        "title and each tenant's `co_residence` say which tenants certainly share a GPU and "
        "which only may. A node known only by its `amd.com/gpu` "
        "capacity is judged with its model unknown (AMD-SB-6010 lists most Instinct and "
        "Radeon GPUs). A GPU passed from one tenant to the next is LEAK-001's (a reset "
        "between tenants)."
    ),
    remediation=(
        "Do not share these GPUs between tenants: taint the node for a single tenant (`kubectl "
        "taint nodes <node> gpuposture.io/tenant=<tenant>:NoSchedule --overwrite` with the "
        "matching toleration on that tenant only) until the vendor's mitigation is installed "
        "(for AMD, the driver/firmware update of bulletin AMD-SB-6010 that clears local "
        "memory between kernels), then verify the driver version against the bulletin."
    ),
    mappings=("SP800-53:SC-4",),
)
def leftoverlocals_shared(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        match = leftoverlocals_match(node, amd_dra_products(inputs, node))
        if match is None:
            continue
        if users := gpu_users(inputs, node):
            yield _leak_draft(inputs, node, match, users)


@dataclass(frozen=True)
class GpuUser:
    """A tenant that shares the node's affected GPUs with another, how it reaches them, and
    whether it certainly meets another tenant on one GPU (False: only possibly, compute
    partitions whose GPU is not visible)."""

    tenant: TenantInfo
    how: str
    certain: bool


def gpu_users(inputs: PostureInputs, node: Node) -> list[GpuUser]:
    """The tenants that share the node's affected GPUs (by slug), none when no GPU is shared.
    Affected GPUs are never NVIDIA's (their holdings on a mixed node are not these GPUs). A
    tenant is in only where its GPUs meet another tenant's: a pod reaching every GPU of the
    node outside the plugin (privileged, or a hostPath over /dev) meets every other tenant's
    GPU use there; a DRA device held by pods of two tenants is shared by both; compute
    partitions meet as SHARE-002 meets them (share.groups), on one GPU for certain where
    AMD's DRA driver names the same parent GPU for both, not at all where it names different
    ones, possibly where nothing names it (the device plugin never does). Whole GPUs the
    vendor's device plugin allocates are one tenant's each; a GPU passed from one tenant to
    the next is LEAK-001's."""
    users, reaching = _node_users(inputs, node)
    found: dict[str, GpuUser] = {}
    if reaching and len(users) >= 2:
        found = {slug: GpuUser(t, how, True) for slug, (t, how) in users.items()}
    for slug, user in _partition_meetings(inputs, node).items():
        if slug in reaching:
            continue  # its reach meets everyone: said already, and certain
        known = found.get(slug)
        found[slug] = replace(user, certain=user.certain or (known is not None and known.certain))
    # One AMD DRA device held by pods of two tenants (a claim they share, a device allocated
    # to several claims, a tenant's adminAccess claim): shared outright by those two only.
    for slug, (tenant, held) in _dra_co_holders(inputs, node).items():
        found[slug] = GpuUser(tenant, held, True)
    return [found[slug] for slug in sorted(found)] if len(found) >= 2 else []


def _node_users(
    inputs: PostureInputs, node: Node
) -> tuple[dict[str, tuple[TenantInfo, str]], set[str]]:
    """Each tenant whose active pods on the node hold or reach GPUs, with how (by slug), and
    those reaching every GPU of the node outside any device plugin."""
    users: dict[str, tuple[TenantInfo, str]] = {}
    reaching: set[str] = set()
    for pod in inputs.pods_by_node.get(node.name, ()):
        tenant = inputs.tenant_of_pod(pod)
        if tenant is None or not pod.is_active:
            continue
        if reach := reaches_every_device(pod):
            reaching.add(tenant.slug)
            users[tenant.slug] = (
                tenant,
                f"pod {pod.namespace}/{pod.name} reaches every GPU: {reach}",
            )
        elif (held := pod.other_accelerators) or pod.resource_claims:
            asked = ", ".join(f"{k}={v}" for k, v in sorted(held.items())) or "a DRA claim"
            if tenant.slug not in users:
                users[tenant.slug] = (tenant, f"pod {pod.namespace}/{pod.name} holds {asked}")
        # else: no device node of the GPUs is in its container
    return users, reaching


def _partition_meetings(inputs: PostureInputs, node: Node) -> dict[str, GpuUser]:
    """Tenants whose AMD compute partitions meet another tenant's on one GPU, the very
    meetings SHARE-002 files (share.groups' mig_ci pools of AMD, device plugin and DRA alike):
    a tenant whose partitions meet no other tenant's (another parent GPU) is not here."""
    found: dict[str, GpuUser] = {}
    for group in shared_groups(inputs, node):
        if group.mode != "mig_ci" or not group.pool.startswith(AMD_POOL_PREFIX):
            continue
        held = _partition_holds(group.holdings)
        for first, second in group.tenant_pairs:
            meeting = group.meeting(first, second, group.pool)
            if meeting is None:
                continue  # named on different GPUs: apart
            certain = meeting.co_residence == "certain"
            for party in (first, second):
                if party.name not in held:
                    continue  # an unclassified namespace's own party: its tenant's is there
                tenant, how = held[party.name]
                known = found.get(party.name)
                sure = certain or (known is not None and known.certain)
                found[party.name] = GpuUser(tenant, how, sure)
    return found


def _partition_holds(holdings: list[GpuHolding]) -> dict[str, tuple[TenantInfo, str]]:
    """Tenant slug -> (tenant, how its first pod holds a compute partition)."""
    found: dict[str, tuple[TenantInfo, str]] = {}
    for h in sorted(holdings, key=lambda h: (h.pod.namespace, h.pod.name)):
        if h.tenant is None or h.tenant.slug in found:
            continue
        pod = f"pod {h.pod.namespace}/{h.pod.name}"
        if h.resource.startswith("resourceclaim/"):  # dra_holdings: the claim is the resource
            how = f"{pod} holds a compute partition: {h.basis}"
        else:
            how = f"{pod} holds {h.resource}={h.count}, a compute partition: {h.basis}"
        found[h.tenant.slug] = (h.tenant, how)
    return found


def _dra_co_holders(inputs: PostureInputs, node: Node) -> dict[str, tuple[TenantInfo, str]]:
    """Tenants holding one AMD DRA device (whole GPU or partition) with another tenant, or
    compute partitions of one GPU its slice names (dra_holdings), each with how: the claim,
    the device, and why the device is shared."""
    by_device: dict[str, list[GpuHolding]] = {}
    for h in dra_holdings(inputs, node):
        # A device of its own (a whole GPU, a partition) meets no one here: LEAK-001's.
        if h.tenant is not None and h.pool.startswith(AMD_POOL_PREFIX) and h.mode != "exclusive":
            for device in h.devices or ():
                by_device.setdefault(device, []).append(h)
    found: dict[str, tuple[TenantInfo, str]] = {}
    for device, holdings in sorted(by_device.items()):
        if len({h.tenant.slug for h in holdings if h.tenant}) < 2:
            continue
        for h in sorted(holdings, key=lambda h: (h.pod.namespace, h.pod.name)):
            if h.tenant is not None and h.tenant.slug not in found:
                held = f"pod {h.pod.namespace}/{h.pod.name} shares {device}: {h.basis}"
                found[h.tenant.slug] = (h.tenant, held)
    return found


def reaches_every_device(pod: Pod) -> str | None:
    """How a pod reaches every device node of its node outside any device plugin, or None:
    a privileged container, or a hostPath volume over /dev (or the root)."""
    privileged = next((c.name for c in pod.containers if c.privileged), None)
    if privileged:
        return f"privileged container {privileged}"
    for volume in pod.volumes:
        path = node_path_of(volume)
        node_path = canonical_host_path(path) if path else ""
        # /dev/kfd, /dev/dri/renderD128 (a GPU each), /dev, or a directory holding /dev.
        if node_path and (path_within(node_path, "/dev") or path_within("/dev", node_path)):
            return f"hostPath volume {volume.name} ({path})"
    return None


def _leak_draft(
    inputs: PostureInputs, node: Node, match: dict[str, Any], users: list[GpuUser]
) -> FindingDraft:
    """One finding per node: the fix (a single tenant per node, or the vendor's update) is
    the node's, for every tenant that shares its GPUs. Tenants that only possibly meet
    (compute partitions whose GPU is not visible) are said apart from those that certainly
    do, in the title and per tenant."""
    sure = [u.tenant.slug for u in users if u.certain]
    maybe = [u.tenant.slug for u in users if not u.certain]
    unseen = "which physical GPU each partition is on is not visible"
    if not maybe:
        residence = "certain"
    elif not sure:
        residence = f"possible: the tenants hold compute partitions, and {unseen}"
    else:
        residence = (
            f"certain for {', '.join(sure)}; possible for {', '.join(maybe)}: they hold "
            f"compute partitions, and {unseen}"
        )
    evidence = {
        "node": node.name,
        "advisory": "CERT/CC VU#446598 (LeftoverLocals, CVE-2023-4969)",
        "affected_by": match,
        "tenants_on_node": [
            {
                "tenant": u.tenant.slug,
                "trust_class": u.tenant.trust_class.slug,
                "reaches_gpus_by": u.how,
                "co_residence": "certain" if u.certain else "possible",
            }
            for u in users
        ],
        "counted_by": (
            "a tenant counts only where its GPUs meet another tenant's: whole GPUs the "
            "vendor's device plugin allocates (amd.com/gpu) are each one tenant's; a pod "
            "reaching every GPU outside the plugin shares them with the rest; a DRA device "
            "(gpu.amd.com) held by pods of two tenants is shared by both; compute partitions "
            "(CPX, DPX, QPX) of one GPU held by two tenants share it, as SHARE-002 judges "
            "them (certain where DRA names the same parent GPU, none where it names "
            "different ones, possible where nothing names it)"
        ),
        "co_residence": residence,
    }
    vendor = match["vendor"]
    gpus = (
        f"{vendor} GPUs of unknown model (LeftoverLocals not ruled out)"
        if match.get("model_unknown")
        else f"LeftoverLocals-affected {vendor} GPUs"
    )
    if not sure:
        title = f"Tenants {', '.join(maybe)} may share partitions of {gpus} on node {node.name}"
    else:
        title = f"Tenants {', '.join(sure)} share {gpus} on node {node.name}"
        title += f"; {', '.join(maybe)} may share partitions of them" if maybe else ""
    tenants = [u.tenant for u in users]
    return node_draft(
        "LEAK-002", node, inputs=inputs, tenants=tenants, evidence=evidence, title=title
    )
