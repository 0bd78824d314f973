"""Which tenant owns a namespace, and which namespaces are the platform's. PURE, shared by
sync (pods, GPU configuration) and the checks' read model."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

TENANT_LABEL = "gpuposture.io/tenant"
# The system tenant standing for every namespace that no tenant claims and that is not the
# platform's (DESIGN §3): its pods are judged under GPUPOSTURE_UNCLASSIFIED_CLASS. No namespace
# can claim it, by the registry or by label: being unclassified is what nobody claiming means.
UNCLASSIFIED = "unclassified"
UNCLASSIFIED_NAME = "Unclassified"
# The party word pages and APIs use for a platform namespace's pods (the node page, the
# workloads and node APIs): never a tenant's slug, or a tenant would pass for the platform.
PLATFORM_PARTY = "platform"
# Slugs no tenant may take, with what each stands for (tenants file, API, admin).
RESERVED_TENANT_SLUGS = {
    UNCLASSIFIED: "namespaces no tenant claims",
    PLATFORM_PARTY: "the platform's own namespaces",
}


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
        if slug in known_tenants and slug != UNCLASSIFIED:
            owners[namespace] = slug
    owners.update((ns, slug) for ns, slug in registry.items() if slug != UNCLASSIFIED)
    return owners


def claimed_namespaces(
    *, namespace_labels: Mapping[str, Mapping[str, str]], tenant_namespaces: Iterable[str] = ()
) -> frozenset[str]:
    """The namespaces tenants claim: the registry's (`tenant_namespaces`) and every one labelled
    `gpuposture.io/tenant` (any value: a label naming no known tenant still says the namespace
    is a tenant's, never the platform's). Their pods are never the node's GPU stack, neither
    its versions nor its settings (docs/clusters.md, "A tenant's pods are never the node's
    stack")."""
    claimed = set(tenant_namespaces)
    claimed.update(ns for ns, labels in namespace_labels.items() if labels.get(TENANT_LABEL))
    return frozenset(claimed)


# The trust class of the platform's own workloads: never the class of namespaces nobody owns
# (GPUPOSTURE_UNCLASSIFIED_CLASS; DESIGN §3: "nothing unknown is ever judged as platform").
PLATFORM_CLASS = "platform"
PLATFORM_LABEL = "gpuposture.io/platform"
# The namespaces every Kubernetes cluster gives its own control plane (DESIGN §3).
DEFAULT_PLATFORM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease"})


def platform_namespaces(
    *,
    namespace_labels: Mapping[str, Mapping[str, str]],
    operator_namespaces: Iterable[str] = (),
    configured: Iterable[str] = (),
    tenant_namespaces: Iterable[str] = (),
) -> frozenset[str]:
    """The platform namespaces of one cluster, failing closed (DESIGN §3): the Kubernetes
    defaults, the GPU Operator's namespace as found (`operator_namespaces`), every namespace
    labelled `gpuposture.io/platform: "true"` and those the deployment names
    (GPUPOSTURE_PLATFORM_NAMESPACES, `configured`). A namespace a tenant claims, in the
    registry (`tenant_namespaces`) or by the `gpuposture.io/tenant` label (any value), is never
    one, whatever else says so: a tenant must not be able to make its namespace the platform's."""
    labelled = {
        ns for ns, labels in namespace_labels.items() if labels.get(PLATFORM_LABEL) == "true"
    }
    claimed = claimed_namespaces(
        namespace_labels=namespace_labels, tenant_namespaces=tenant_namespaces
    )
    found = DEFAULT_PLATFORM_NAMESPACES | labelled | set(operator_namespaces) | set(configured)
    return frozenset(ns for ns in found if ns and ns not in claimed)
