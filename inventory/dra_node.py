"""The DRA devices a node's claims hold and by whom, for the node page and API: each GPU or
MIG device allocated on the node, the claim (namespace and tenant) and the pods using it, the
sharing mode and why. Tenant viewers see other tenants' claims as hidden, as holdings are."""

from __future__ import annotations

from typing import Any

from inventory import snapshot as snap
from inventory.dra_devices import DraIndex
from inventory.models import ClusterObject, Node
from inventory.platform import cluster_platform_namespaces, unclaimed_party
from tenants.mapping import resolve_namespace_owners
from tenants.models import Tenant, TenantNamespace
from tenants.redaction import Field, HiddenScope

_KINDS = {
    "dra_claim": ("dra_claims", snap.DraClaim),
    "dra_slice": ("dra_slices", snap.DraSlice),
    "dra_device_class": ("dra_device_classes", snap.DraDeviceClass),
    "namespace": ("namespaces", snap.Namespace),
}
REDACTED = {
    "namespace": Field.NAMESPACE,
    "claim": Field.SUBJECT_NAME,
    "tenant": Field.TENANT,
    "party": Field.TENANT,
    "consumers": Field.OBJECTS,
}


def node_dra_devices(
    node: Node, scope: HiddenScope | None = None, platform: frozenset[str] | None = None
) -> list[dict[str, Any]]:
    """One row per device a claim holds on this node (a few queries, whatever the node).
    `party` is the claim's tenant, or for a namespace no tenant claims "platform" or
    "unclassified" (inventory.platform.unclaimed_party); `platform`: the cluster's platform
    namespaces when the caller has read them already."""
    scope = scope.in_cluster(node.cluster_id) if scope is not None else None
    grouped: dict[str, list] = {attribute: [] for attribute, _ in _KINDS.values()}
    rows = ClusterObject.objects.filter(cluster_id=node.cluster_id, kind__in=list(_KINDS))
    for kind, data in rows.values_list("kind", "data"):
        attribute, cls = _KINDS[kind]
        grouped[attribute].append(snap.from_dict(cls, data))
    if not grouped["dra_claims"]:
        return []
    snapshot = snap.ClusterSnapshot(**{k: tuple(v) for k, v in grouped.items()})
    owners = resolve_namespace_owners(
        namespace_labels={ns.name: ns.labels for ns in snapshot.namespaces},
        registry=dict(TenantNamespace.objects.values_list("name", "tenant__slug")),
        known_tenants=set(Tenant.objects.values_list("slug", flat=True)),
    )
    # The platform's adminAccess claims (monitoring) do not make a tenant's device shared.
    if platform is None:
        platform = cluster_platform_namespaces(node.cluster)
    platform = platform - set(owners)
    index = DraIndex(snapshot, platform)
    devices = []
    for claim in sorted(snapshot.dra_claims, key=lambda c: (c.namespace, c.name)):
        for held in index.held_devices(claim):
            if held.node != node.name or not held.kind:
                continue
            row = {
                "device": held.result.device,
                "device_id": held.device_id,
                "kind": held.kind,
                "product": held.product or None,
                "profile": held.profile or None,
                "driver": held.result.driver,
                "pool": held.result.pool,
                "namespace": claim.namespace,
                "claim": claim.name,
                "tenant": owners.get(claim.namespace),
                "party": owners.get(claim.namespace) or unclaimed_party(claim.namespace, platform),
                "consumers": [c.split("/", 1)[-1] for c in claim.reserved_for],
                "admin_access": held.result.admin_access,
                "mode": held.mode,
                "basis": held.basis,
            }
            if scope is not None:
                scope.fields(row, REDACTED)
            devices.append(row)
    return sorted(devices, key=lambda r: (r["device"], str(r["namespace"]), str(r["claim"])))
