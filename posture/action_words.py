"""Titles of actions made once for many workloads (posture.actions). PURE."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from posture.actions import ActionFinding

# Where each mesh's injector takes its proxy image from.
INJECTOR_CONFIG = {
    "istio": (
        "Istio",
        "the mesh's injector config (Helm/IstioOperator global.proxy.image, or the "
        "istio-system ConfigMap istio-sidecar-injector)",
    ),
    "linkerd": (
        "Linkerd",
        "the mesh's injector config (Helm proxy.image / proxyInit.image, the linkerd-config "
        "ConfigMap)",
    ),
}


def injector_title(mesh: str, members: Sequence[ActionFinding]) -> str:
    """ "Pin the Istio sidecar image docker.io/istio/proxyv2:1.27.3 by digest in the mesh's
    injector config (...): closes 15 findings, 5 tenants"."""
    name, where = INJECTOR_CONFIG.get(mesh, (mesh, "the mesh's injector config"))
    images = sorted(
        {
            str(c.get("image"))
            for f in members
            for c in f.evidence.get("containers") or ()
            if isinstance(c, dict) and c.get("image")
        }
    )
    shown = ", ".join(images) if len(images) <= 2 else f"{len(images)} images"
    unapproved = any(
        "not approved" in str(p)
        for f in members
        for c in f.evidence.get("containers") or ()
        if isinstance(c, dict)
        for p in c.get("problems") or ()
    )
    how = "by digest from an approved registry" if unapproved else "by digest"
    tenants = {t for f in members for t in f.tenant_weights}
    return (
        f"Pin the {name} sidecar image {shown} {how} in {where}: closes {len(members)} "
        f"findings, {len(tenants)} tenants"
    )


def sidecarset_title(fix: str, members: Sequence[ActionFinding]) -> str:
    """ "Remove the host path volumes from SidecarSet log-agent, which injects them into the
    pods of 2 workloads: closes 2 findings, 2 tenants"."""
    workloads = {(f.subject_kind, f.subject_namespace, f.subject_name) for f in members}
    tenants = {t for f in members for t in f.tenant_weights}
    count = "1 workload" if len(workloads) == 1 else f"{len(workloads)} workloads"
    return (
        f"{fix}, which injects them into the pods of {count}: closes {len(members)} findings, "
        f"{len(tenants)} tenants"
    )


def credentials_fix(evidence: Mapping[str, Any]) -> str:
    """POD-008's fix as where its credentials are: the env (variables, a ConfigMap's keys), the
    command line (`command`/`args`), or both."""
    containers = [c for c in evidence.get("containers") or () if isinstance(c, Mapping)]
    places = [
        place
        for place, key in (("env", "variables"), ("command line", "arguments"))
        if any(c.get(key) for c in containers)
    ]
    return f"Move literal credentials out of the {' and '.join(places) or 'env'} of"
