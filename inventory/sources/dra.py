"""DRA objects (resource.k8s.io v1, v1beta2, v1beta1) -> snapshot dataclasses. PURE.

v1 and v1beta2 nest a request's device class under `exactly` and a slice's attributes directly
on the device; v1beta1 keeps them flat on the request and under `basic` on the device. Both
shapes are read whatever apiVersion the object says, so a snapshot mixing versions reads the
same. Of an opaque config only the driver, its kind and `sharing.strategy` are kept.
"""

from __future__ import annotations

import re
from typing import Any

from inventory.snapshot_dra import (
    DraClaim,
    DraClaimTemplate,
    DraConfig,
    DraDevice,
    DraDeviceClass,
    DraRequest,
    DraResult,
    DraSlice,
    PodClaim,
)
from inventory.sources.raw import as_int, dicts, dig, flag, mapping, meta, name_of, str_tuple, text

DRA_KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")
_DRIVER_IN_CEL = re.compile(r"device\.driver\s*==\s*['\"]([^'\"]+)['\"]")
_ATTRIBUTE_TYPES = ("string", "int", "bool", "version")
# The facts dra_stack reads, only in the types NVIDIA's DRA driver publishes them: a bool
# productName is no product name (it stays unknown, never "true").
_FACT_TYPES = {
    "productName": ("string",),
    "driverVersion": ("string", "version"),
    "cudaDriverVersion": ("string", "version"),
}


def claim_from(obj: dict[str, Any], namespace: str) -> DraClaim:
    devices = dig(obj, "spec", "devices")
    allocation = dig(obj, "status", "allocation")
    allocated = dig(allocation, "devices")
    owner = next(
        (o for o in dicts(meta(obj).get("ownerReferences")) if text(o.get("kind")) == "Pod"), {}
    )
    annotations = mapping(meta(obj).get("annotations"))
    return DraClaim(
        namespace=namespace,
        name=name_of(obj),
        api_version=text(obj.get("apiVersion"), "") or "",
        requests=tuple(request_from(r) for r in dicts(devices.get("requests"))),
        config=_configs(devices.get("config")),
        results=tuple(_result(r) for r in dicts(allocated.get("results"))),
        allocation_config=_configs(allocated.get("config")),
        node_name=allocated_node(allocation),
        reserved_for=tuple(
            f"{text(r.get('resource'), 'pods')}/{text(r.get('name'), '')}"
            for r in dicts(dig(obj, "status").get("reservedFor"))
            if text(r.get("name"))
        ),
        owner_pod=text(owner.get("name")),
        pod_claim_name=text(annotations.get("resource.kubernetes.io/pod-claim-name")),
    )


def claim_template_from(obj: dict[str, Any], namespace: str) -> DraClaimTemplate:
    devices = dig(obj, "spec", "spec", "devices")
    return DraClaimTemplate(
        namespace=namespace,
        name=name_of(obj),
        api_version=text(obj.get("apiVersion"), "") or "",
        requests=tuple(request_from(r) for r in dicts(devices.get("requests"))),
        config=_configs(devices.get("config")),
    )


def device_class_from(obj: dict[str, Any]) -> DraDeviceClass:
    spec = mapping(obj.get("spec"))
    selectors = tuple(
        expr
        for s in dicts(spec.get("selectors"))
        if (expr := text(dig(s, "cel").get("expression")))
    )
    drivers = sorted({d for expr in selectors for d in _DRIVER_IN_CEL.findall(expr)})
    return DraDeviceClass(
        name=name_of(obj),
        api_version=text(obj.get("apiVersion"), "") or "",
        config=_configs(spec.get("config"), source="class"),
        selectors=selectors,
        drivers=tuple(drivers),
    )


def slice_from(obj: dict[str, Any]) -> DraSlice:
    spec = mapping(obj.get("spec"))
    return DraSlice(
        name=name_of(obj),
        driver=text(spec.get("driver"), "") or "",
        pool=text(dig(spec, "pool").get("name"), "") or "",
        api_version=text(obj.get("apiVersion"), "") or "",
        node_name=text(spec.get("nodeName")) or None,
        devices=tuple(_device(d) for d in dicts(spec.get("devices")) if text(d.get("name"))),
    )


def pod_claims(spec: dict[str, Any], status: dict[str, Any]) -> tuple[PodClaim, ...]:
    """A pod's spec.resourceClaims, each with the claim it names or was generated for it
    (status.resourceClaimStatuses; a template's claim is named there once it exists), then the
    claim made for its extended-resource requests where DRA serves them (extended_claim)."""
    generated = {
        text(s.get("name")): text(s.get("resourceClaimName"))
        for s in dicts(status.get("resourceClaimStatuses"))
    }
    claims = []
    for entry in dicts(spec.get("resourceClaims")):
        name = text(entry.get("name"))
        if not name:
            continue
        template = text(entry.get("resourceClaimTemplateName"))
        claim = text(entry.get("resourceClaimName")) or generated.get(name)
        claims.append(PodClaim(name=name, claim=claim, template=template))
    extended = extended_claim(status)
    return (*claims, extended) if extended else tuple(claims)


def extended_claim(status: dict[str, Any]) -> PodClaim | None:
    """The claim the scheduler made for a pod's extended-resource requests where DRA serves
    the resource (KEP-5004: a DeviceClass's spec.extendedResourceName), as the pod's
    status.extendedResourceClaimStatus names it, with the (container, resource) pairs its
    requestMappings say it serves; None where the status names no claim (the requests are
    then a device plugin's, as before)."""
    found = dig(status, "extendedResourceClaimStatus")
    claim = text(found.get("resourceClaimName"))
    if not claim:
        return None
    served = tuple(
        sorted(
            {
                (container, resource)
                for m in dicts(found.get("requestMappings"))
                if (container := text(m.get("containerName")))
                and (resource := text(m.get("resourceName")))
            }
        )
    )
    return PodClaim(name="", claim=claim, extended=served)


def request_from(raw: dict[str, Any]) -> DraRequest:
    # v1 / v1beta2: the request's fields under `exactly`; v1beta1: on the request itself.
    exact = mapping(raw.get("exactly")) or raw
    return DraRequest(
        name=text(raw.get("name"), "") or "",
        device_class=text(exact.get("deviceClassName"), "") or "",
        admin_access=flag(exact.get("adminAccess")) is True,
        count=as_int(exact.get("count")),
        allocation_mode=text(exact.get("allocationMode"), "") or "",
        alternatives=tuple(
            c for s in dicts(raw.get("firstAvailable")) if (c := text(s.get("deviceClassName")))
        ),
        subrequests=tuple(
            text(s.get("name"), "") or ""
            for s in dicts(raw.get("firstAvailable"))
            if text(s.get("deviceClassName"))
        ),
    )


def config_from(raw: dict[str, Any], source: str = "claim") -> DraConfig | None:
    opaque = mapping(raw.get("opaque"))
    driver = text(opaque.get("driver"))
    if not driver:
        return None
    parameters = mapping(opaque.get("parameters"))
    written = text(raw.get("source"), "") or ""  # status.allocation: FromClass / FromClaim
    return DraConfig(
        driver=driver,
        requests=str_tuple(raw.get("requests")),
        kind=text(parameters.get("kind"), "") or "",
        sharing=text(dig(parameters, "sharing").get("strategy"), "") or "",
        source="class" if written == "FromClass" else "claim" if written else source,
    )


def _configs(value: Any, source: str = "claim") -> tuple[DraConfig, ...]:
    return tuple(c for c in (config_from(r, source) for r in dicts(value)) if c)


def allocated_node(allocation: dict[str, Any]) -> str | None:
    """The node a node-local allocation is bound to: its selector's metadata.name match."""
    for term in dicts(dig(allocation, "nodeSelector").get("nodeSelectorTerms")):
        for part in ("matchFields", "matchExpressions"):
            for req in dicts(term.get(part)):
                values = str_tuple(req.get("values"))
                if (
                    text(req.get("key")) in ("metadata.name", "kubernetes.io/hostname")
                    and len(values) == 1
                    and text(req.get("operator")) == "In"
                ):
                    return values[0]
    return None


def _result(raw: dict[str, Any]) -> DraResult:
    return DraResult(
        request=text(raw.get("request"), "") or "",
        driver=text(raw.get("driver"), "") or "",
        pool=text(raw.get("pool"), "") or "",
        device=text(raw.get("device"), "") or "",
        admin_access=flag(raw.get("adminAccess")) is True,
    )


def _device(raw: dict[str, Any]) -> DraDevice:
    # v1beta1 keeps a device's attributes under `basic`.
    attributes = mapping(raw.get("attributes")) or dig(raw, "basic").get("attributes")
    values: dict[str, str] = {}
    for key, value in mapping(attributes).items():
        value = mapping(value)
        # "gpu.nvidia.com/uuid" and "uuid" (the driver's own domain) are one attribute.
        name = str(key).rsplit("/", 1)[-1]
        types = _FACT_TYPES.get(name, _ATTRIBUTE_TYPES)
        found = next((value[t] for t in types if t in value), None)
        if found is None or isinstance(found, dict | list):
            continue
        values[name] = str(found).lower() if isinstance(found, bool) else str(found)
    return DraDevice(name=text(raw.get("name"), "") or "", attributes=values)
