"""What a policy pack is generated from: one cluster's tenants and their parameters. PURE.

enforcement.selectors builds it from the registry and the inventory; tests build it by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from posture.exemptions import Exemption

DIALECTS = ("vap", "kyverno")
MODES = ("audit", "enforce")
# Where the generated parameter ConfigMaps live (the pack creates the namespace).
PARAMS_NAMESPACE = "gpuposture-policy"


@dataclass(frozen=True)
class TenantPack:
    """One tenant as the pack binds it: its namespaces and the parameters its rules read."""

    slug: str
    trust_class: str
    namespaces: tuple[str, ...]
    principals: tuple[str, ...] = ()  # "group:NAME", "user:NAME"
    approved_modes: tuple[str, ...] = ()  # active approvals on this cluster (SHARE-004)
    # The cluster's replicated resources whose mode the tenant has no approval for.
    unapproved_resources: tuple[str, ...] = ()
    visible_devices_configmaps: tuple[str, ...] = ()  # "namespace/name" setting the variable
    pool_taint: tuple[str, str] | None = None  # (key, value) of its class's pool; None: none
    foreign_taints: tuple[tuple[str, str], ...] = ()  # other classes' pool taints (key, value)


@dataclass(frozen=True)
class PackInputs:
    cluster: str
    tenants: tuple[TenantPack, ...] = ()
    exemptions: tuple[Exemption, ...] = ()
    params_namespace: str = PARAMS_NAMESPACE
    # How many namespaces were left out as the platform's (for the page's summary).
    platform_namespaces: tuple[str, ...] = field(default_factory=tuple)

    @property
    def namespaces(self) -> dict[str, str]:
        """namespace -> tenant slug, for every namespace the pack binds."""
        return {ns: t.slug for t in self.tenants for ns in t.namespaces}


def delimited(items: tuple[str, ...] | list[str]) -> str:
    """ ",a,b," (or "," for none): membership is `contains(',' + x + ',')` in core CEL."""
    return "," + "".join(f"{item}," for item in sorted(set(items)))


def tenant_params(tenant: TenantPack) -> dict[str, str]:
    """The ConfigMap data the tenant's pod rules read (every key always present: a missing
    key is an evaluation error, which denies)."""
    key, value = tenant.pool_taint or ("", "")
    return {
        "tenant": tenant.slug,
        "trustClass": tenant.trust_class,
        "approvedModes": delimited(list(tenant.approved_modes)),
        "unapprovedResources": delimited(list(tenant.unapproved_resources)),
        "visibleDevicesConfigMaps": delimited(list(tenant.visible_devices_configmaps)),
        "poolTaintKey": key,
        "poolTaintValue": value,
        # The pool's nodes carry the class as a label under the taint's key (K8S-002's fix).
        "poolLabelKey": key,
        "poolLabelValue": value,
        "foreignTaints": delimited([f"{k}={v}" for k, v in tenant.foreign_taints]),
        "foreignTaintKeys": delimited([k for k, _ in tenant.foreign_taints]),
    }


def principals_params(inputs: PackInputs) -> dict[str, str]:
    """The node rule's parameters: every tenant principal, and each tenant namespace's service
    accounts as the group Kubernetes gives them."""
    names = [p for t in inputs.tenants for p in t.principals]
    names += [f"group:system:serviceaccounts:{ns}" for t in inputs.tenants for ns in t.namespaces]
    return {"principals": delimited(names)}
