"""LEAK-002: GPUs affected by LeftoverLocals (VU#446598) shared between tenants."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from inventory.dra_devices import AMD_DRIVER
from inventory.snapshot import Node, Pod
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import path_within, sorted_nodes
from posture.rules.dra_holdings import dra_holdings
from posture.rules.holding import GpuHolding
from posture.rules.pod.host_areas import canonical_host_path
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft
from posture.rules.vendor_holdings import vendor_sharing

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
        "same GPU for both). A node known only by its `amd.com/gpu` "
        "capacity is judged with its model unknown (AMD-SB-6010 lists most Instinct and "
        "Radeon GPUs). A GPU passed from one tenant to the next is LEAK-001's (a reset "
        "between tenants)."
    ),
    remediation=(
        "Do not share these GPUs between tenants: taint the node for a single tenant "
        "(`kubectl taint nodes <node> gpuposture.io/tenant=<tenant>:NoSchedule` with the "
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
        tenants, how, may = _gpu_users(inputs, node)
        if len(tenants) < 2:
            continue
        yield _leak_draft(node, match, tenants, how, may)


def _gpu_users(inputs: PostureInputs, node: Node) -> tuple[list[TenantInfo], dict[str, str], bool]:
    """The tenants that share the node's affected GPUs, how each reaches them, and whether they
    only may (compute partitions of tenants, none reaching every GPU); none when no GPU is
    shared. Affected GPUs are never NVIDIA's (their holdings on a mixed node are
    not these GPUs): the vendor's device plugin (`amd.com/gpu`) hands out whole GPUs, so
    tenants holding one each share nothing; a GPU is shared only where a tenant's pod reaches
    every GPU of the node outside the plugin (privileged, or a hostPath over /dev) beside
    another tenant's use, or where tenants hold compute partitions of a partitioned node's GPUs
    (vendor_holdings.vendor_sharing). A GPU passed from one tenant to the next is LEAK-001's."""
    tenants: dict[str, TenantInfo] = {}
    how: dict[str, str] = {}
    reaching: set[str] = set()
    # Compute partitions (CPX, mixed-naming partition resources) of one GPU are not one
    # tenant's GPU: tenants holding partitions on the node may share a GPU (which partition is
    # on which GPU is not visible).
    partitions = {
        name: basis
        for name, (mode, basis) in vendor_sharing(node).items()
        if mode == "mig_ci" and name.startswith(AMD_POOL_PREFIX)
    }
    partition_holders: dict[str, str] = {}  # tenant -> its pod holding a partition, and why
    for pod in inputs.pods_by_node.get(node.name, ()):
        tenant = inputs.tenant_of_pod(pod)
        if tenant is None or not pod.is_active:
            continue
        reach = reaches_every_device(pod)
        if reach:
            reaching.add(tenant.slug)
            how[tenant.slug] = f"pod {pod.namespace}/{pod.name} reaches every GPU: {reach}"
        elif (held := pod.other_accelerators) or pod.resource_claims:
            asked = ", ".join(f"{k}={v}" for k, v in sorted(held.items())) or "a DRA claim"
            holds = f"pod {pod.namespace}/{pod.name} holds {asked}"
            if parts := sorted(set(held) & set(partitions)):
                why = partitions[parts[0]]
                partition_holders.setdefault(tenant.slug, f"{holds}, a compute partition: {why}")
            how.setdefault(tenant.slug, holds)
        else:
            continue  # no device node of the GPUs is in its container
        tenants[tenant.slug] = tenant
    for slug, held in _dra_partition_holders(inputs, node, partition_holders).items():
        partition_holders.setdefault(slug, held)
    # AMD GPUs AMD's DRA driver allocates: one device held by pods of two tenants (a claim
    # they share, a device allocated to several claims, a tenant's adminAccess claim) is
    # shared outright, whoever else is on the node.
    for slug, (tenant, held) in _dra_co_holders(inputs, node).items():
        tenants[slug], how[slug] = tenant, held
        reaching.add(slug)
    if len(tenants) < 2 or not (reaching or len(partition_holders) >= 2):
        return [], {}, False
    if not reaching:
        # Only partitions meet here: the tenants holding none share no GPU with them, and
        # those holding one may be on different GPUs.
        tenants = {slug: t for slug, t in tenants.items() if slug in partition_holders}
        how.update(partition_holders)
    return [tenants[slug] for slug in sorted(tenants)], how, not reaching


def _dra_partition_holders(
    inputs: PostureInputs, node: Node, plugin: dict[str, str]
) -> dict[str, str]:
    """Tenants holding AMD compute partitions through DRA that may share a GPU with another
    tenant's partition (`plugin`: the device plugin's holders, whose GPU is never told), each
    with how: where its slice names no parent GPU, or the other's does not. Partitions of one
    named GPU are _dra_co_holders' (certain); of different named GPUs, apart."""
    unnamed: dict[str, str] = {}
    named: dict[str, str] = {}
    for h in dra_holdings(inputs, node):
        if h.tenant is None or h.mode != "mig_ci" or not h.pool.startswith(AMD_POOL_PREFIX):
            continue
        held = f"pod {h.pod.namespace}/{h.pod.name} holds a compute partition: {h.basis}"
        (named if h.devices else unnamed).setdefault(h.tenant.slug, held)
    unknown = set(plugin) | set(unnamed)
    found = dict(unnamed)
    for slug, held in named.items():
        if unknown - {slug}:
            found.setdefault(slug, held)
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
        path = volume.host_path or volume.pv_path
        node_path = canonical_host_path(path) if path else ""
        # /dev/kfd, /dev/dri/renderD128 (a GPU each), /dev, or a directory holding /dev.
        if node_path and (path_within(node_path, "/dev") or path_within("/dev", node_path)):
            return f"hostPath volume {volume.name} ({path})"
    return None


def _leak_draft(
    node: Node,
    match: dict[str, Any],
    tenants: list[TenantInfo],
    how: dict[str, str],
    may: bool = False,
) -> FindingDraft:
    """One finding per node: the fix (a single tenant per node, or the vendor's update) is
    the node's, for every tenant that uses its GPUs. `may`: only compute partitions meet, and
    which GPU each is on is not visible."""
    evidence = {
        "node": node.name,
        "advisory": "CERT/CC VU#446598 (LeftoverLocals, CVE-2023-4969)",
        "affected_by": match,
        "tenants_on_node": [
            {"tenant": t.slug, "trust_class": t.trust_class.slug, "reaches_gpus_by": how[t.slug]}
            for t in tenants
        ],
        "counted_by": (
            "whole GPUs the vendor's device plugin allocates (amd.com/gpu) are each one "
            "tenant's; a pod reaching every GPU outside the plugin shares them with the rest; "
            "a DRA device (gpu.amd.com) held by pods of two tenants is shared by both; "
            "compute partitions (CPX, DPX, QPX) of one GPU held by two tenants share it "
            "(certain where DRA names their GPU, possible where nothing does)"
        ),
        "co_residence": (
            "possible: the tenants hold compute partitions, and which physical GPU each "
            "partition is on is not visible"
            if may
            else "certain"
        ),
    }
    names = ", ".join(t.slug for t in tenants)
    vendor = match["vendor"]
    gpus = (
        f"{vendor} GPUs of unknown model (LeftoverLocals not ruled out)"
        if match.get("model_unknown")
        else f"LeftoverLocals-affected {vendor} GPUs"
    )
    verb = "may share partitions of" if may else "share"
    title = f"Tenants {names} {verb} {gpus} on node {node.name}"
    return node_draft("LEAK-002", node, tenants=tenants, evidence=evidence, title=title)
