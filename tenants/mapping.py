"""Which tenant owns a namespace. PURE, shared by sync (pods) and the checks' read model."""

from __future__ import annotations

from collections.abc import Mapping

TENANT_LABEL = "gpuposture.io/tenant"


def resolve_namespace_owners(
    *,
    namespace_labels: Mapping[str, Mapping[str, str]],
    registry: Mapping[str, str],
    known_tenants: set[str],
) -> dict[str, str]:
    """namespace -> tenant slug. The registry's namespace list wins over the namespace label
    `gpuposture.io/tenant`; a label naming no known tenant is ignored (anyone who can label a
    namespace must not be able to claim a tenant that does not exist)."""
    owners: dict[str, str] = {}
    for namespace, labels in namespace_labels.items():
        slug = labels.get(TENANT_LABEL)
        if slug in known_tenants:
            owners[namespace] = slug
    owners.update(registry)
    return owners
