"""Reads for the policy packs: every database fact a pack is generated from, gathered here.

The registry (trust classes, tenants, namespaces, principals), the cluster's active sharing
approvals and check exemptions, and what the last sync saw (namespaces claimed by label, the
resources the device plugin replicates, ConfigMaps that set NVIDIA_VISIBLE_DEVICES) come
through posture.read_model.posture_inputs, the same read model the checks take, so a pack and
the findings never disagree about who owns a namespace.
"""

from __future__ import annotations

from enforcement.inputs import PackInputs, TenantPack
from inventory.models import Cluster
from posture.inputs import PostureInputs, TenantInfo
from posture.read_model import posture_inputs
from tenants.mapping import UNCLASSIFIED
from tenants.models import TrustClass
from tenants.policy import FRACTIONAL_RESOURCES
from tenants.pool_taints import PoolTaintRules, parse_pool_taint

VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"


def pack_inputs(cluster: Cluster, inputs: PostureInputs | None = None) -> PackInputs:
    """The pack's inputs for one cluster, as the registry and the last sync give them now
    (from `inputs` when the caller already read them)."""
    inputs = inputs or posture_inputs(cluster)
    classes = {
        slug: dedicated
        for slug, dedicated in TrustClass.objects.values_list("slug", "requires_dedicated_pool")
    }
    owners: dict[str, set[str]] = {}
    for namespace, slug in inputs.namespace_owner.items():
        owners.setdefault(slug, set()).add(namespace)
    tenants = []
    for tenant in inputs.tenants:
        if tenant.slug == UNCLASSIFIED:  # nobody's namespaces: no tenant to bind
            continue
        namespaces = (set(tenant.namespaces) | owners.get(tenant.slug, set())) - set(
            inputs.platform_namespaces
        )
        if namespaces:
            tenants.append(_tenant_pack(inputs, tenant, tuple(sorted(namespaces)), classes))
    return PackInputs(
        cluster=cluster.name,
        tenants=tuple(tenants),
        exemptions=inputs.exemptions,
        platform_namespaces=tuple(sorted(inputs.platform_namespaces)),
    )


def _tenant_pack(
    inputs: PostureInputs,
    tenant: TenantInfo,
    namespaces: tuple[str, ...],
    classes: dict[str, bool],
) -> TenantPack:
    approved = sorted(
        {r.mode for r in inputs.sharing_requests if r.tenant == tenant.slug and r.state == "active"}
    )
    own = tenant.trust_class.slug
    rules = inputs.pool_taint_rules
    return TenantPack(
        slug=tenant.slug,
        trust_class=own,
        namespaces=namespaces,
        principals=tenant.principals,
        approved_modes=tuple(approved),
        unapproved_resources=_unapproved_resources(inputs, set(approved)),
        visible_devices_configmaps=tuple(
            sorted(
                f"{cm.namespace}/{cm.name}"
                for cm in inputs.snapshot.env_configmaps
                if cm.namespace in namespaces and VISIBLE_DEVICES in cm.keys
            )
        ),
        pool_taint=class_pool_taint(own, rules) if classes.get(own) else None,
        foreign_taints=tuple(
            taint for slug in sorted(classes) if slug != own for taint in class_taints(slug, rules)
        ),
    )


def _unapproved_resources(inputs: PostureInputs, approved: set[str]) -> tuple[str, ...]:
    """Resources the cluster's device plugin replicates by a mode not approved for the tenant,
    and HAMi's fraction counters (soft limits: time-slicing) without a time-slicing approval."""
    modes: dict[str, set[str]] = {}
    for node in inputs.snapshot.nodes:
        for shared in node.resource_sharing:
            # Replicas under the device's own name (nvidia.com/gpu time-sliced in place) look
            # like whole GPUs at admission: which one a pod gets depends on the node it lands
            # on, which admission does not know. SHARE-004 reports those after scheduling.
            if shared.name != shared.source:
                modes.setdefault(shared.name, set()).add(shared.mode)
    names = {name for name, used in modes.items() if not used <= approved}
    if "time_slicing" not in approved:
        names |= set(FRACTIONAL_RESOURCES)
    return tuple(sorted(names))


def class_taints(slug: str, rules: PoolTaintRules) -> list[tuple[str, str]]:
    """Every taint that marks a pool for the class: each pool taint key valued with the
    class, and the class's exact taints."""
    taints = [(key, slug) for key in rules.keys]
    for text in rules.exact.get(slug, ()):
        key, value, _ = parse_pool_taint(text)
        taints.append((key, value))
    return taints


def class_pool_taint(slug: str, rules: PoolTaintRules) -> tuple[str, str] | None:
    """The taint the class's pods must tolerate: its first exact taint, else the first key."""
    exact = rules.exact.get(slug, ())
    if exact:
        key, value, _ = parse_pool_taint(exact[0])
        return key, value
    return (rules.keys[0], slug) if rules.keys else None
