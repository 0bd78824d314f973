"""Dynamic Resource Allocation objects as the checks read them (resource.k8s.io v1, v1beta2,
v1beta1: one shape whatever version was read; `api_version` records which). PURE.

Kept: what says which device a claim holds, on which node, for whom, and how it is shared
(the NVIDIA DRA driver's opaque sharing config). Nothing else of an opaque config is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"


@dataclass(frozen=True)
class PodClaim:
    """One entry of a pod's spec.resourceClaims and the claim it resolved to."""

    name: str  # the pod's own name for it (containers' resources.claims use it)
    claim: str | None = None  # resourceClaimName, or the claim generated from the template
    template: str | None = None  # resourceClaimTemplateName
    # KEP-5004 (Kubernetes 1.34+): the claim the scheduler made for the pod's extended-resource
    # requests where a DeviceClass serves that resource (status.extendedResourceClaimStatus),
    # with the (container, resource) pairs it serves (requestMappings). Such an entry is in no
    # spec.resourceClaims: `name` is "" and `claim` names the generated claim. Those requests
    # are held through the claim, not a device plugin (Pod.gpu_resources leaves them out).
    extended: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DraRequest:
    """A device request of a claim or template (v1 `exactly`, v1beta1 flat fields)."""

    name: str
    device_class: str = ""
    admin_access: bool = False
    count: int | None = None
    allocation_mode: str = ""
    # firstAvailable: the device classes of the alternatives, in order, and their names
    alternatives: tuple[str, ...] = ()
    subrequests: tuple[str, ...] = ()


@dataclass(frozen=True)
class DraConfig:
    """An opaque config entry: its driver, the requests it applies to (() = all), and the
    sharing strategy it sets (NVIDIA's GpuConfig / MigDeviceConfig `sharing.strategy`)."""

    driver: str
    requests: tuple[str, ...] = ()
    kind: str = ""  # parameters.kind ("GpuConfig", "MigDeviceConfig")
    sharing: str = ""  # "TimeSlicing", "MPS", or "" when it sets none
    source: str = "claim"  # "claim" or "class" (status.allocation says FromClaim / FromClass)


@dataclass(frozen=True)
class DraResult:
    """One allocated device (status.allocation.devices.results[])."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False


@dataclass(frozen=True)
class DraClaim:
    namespace: str
    name: str
    api_version: str = ""
    requests: tuple[DraRequest, ...] = ()
    config: tuple[DraConfig, ...] = ()
    results: tuple[DraResult, ...] = ()
    # status.allocation.devices.config: the class's and the claim's config as allocated
    allocation_config: tuple[DraConfig, ...] = ()
    node_name: str | None = None  # from the allocation's node selector, when it names one
    reserved_for: tuple[str, ...] = ()  # consumers as "pods/NAME"
    # A claim generated from a template for one pod: that pod, and the pod's name for the claim
    owner_pod: str | None = None
    pod_claim_name: str | None = None

    @property
    def admin_access(self) -> bool:
        return any(r.admin_access for r in self.requests) or any(
            r.admin_access for r in self.results
        )


@dataclass(frozen=True)
class DraClaimTemplate:
    namespace: str
    name: str
    api_version: str = ""
    requests: tuple[DraRequest, ...] = ()
    config: tuple[DraConfig, ...] = ()

    @property
    def admin_access(self) -> bool:
        return any(r.admin_access for r in self.requests)


@dataclass(frozen=True)
class DraDeviceClass:
    name: str
    api_version: str = ""
    config: tuple[DraConfig, ...] = ()
    selectors: tuple[str, ...] = ()  # CEL expressions, as written
    drivers: tuple[str, ...] = ()  # the drivers its selectors name (device.driver == "...")


@dataclass(frozen=True)
class DraDevice:
    name: str
    # attribute name (domain prefix dropped) -> value as text: type, uuid, index,
    # productName, parentUUID, profile, ...
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DraSlice:
    name: str
    driver: str
    pool: str
    api_version: str = ""
    node_name: str | None = None
    devices: tuple[DraDevice, ...] = ()
