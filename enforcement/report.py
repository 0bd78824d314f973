"""A pack as the page, the API and the CLI deliver it: objects, YAML, hash, the diff against
the previous generated pack, and the impact preview narrowed to what the user may see."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from enforcement.build import build_pack
from enforcement.packs import check_arguments
from enforcement.preview import Unpreviewed, pack_rules, preview
from enforcement.render import pack_hash, pack_yaml
from enforcement.selectors import pack_inputs
from enforcement.services import generated_pack_record
from gpuposture.base.roles import reads_all_posture
from inventory.models import Cluster
from posture.inputs import PostureInputs
from posture.read_model import posture_inputs
from tenants.models import Tenant, TenantNamespace


@dataclass
class PackReport:
    cluster: Cluster
    dialect: str
    mode: str
    objects: list[dict]
    yaml: str
    sha256: str
    rows: list[dict]
    unpreviewed: list[Unpreviewed]
    tenants: int
    previous_sha256: str = ""
    diff: list[str] = field(default_factory=list)


def visible_namespaces(
    user: AbstractBaseUser | AnonymousUser, posture: PostureInputs
) -> set[str] | None:
    """None: every namespace; else the namespaces of the tenants a tenant viewer views, as
    the registry lists them and as the cluster's namespace labels claim them."""
    if reads_all_posture(user):
        return None
    slugs = set(Tenant.objects.visible_to(user).values_list("slug", flat=True))
    listed = TenantNamespace.objects.filter(tenant__slug__in=slugs).values_list("name", flat=True)
    claimed = {ns for ns, slug in posture.namespace_owner.items() if slug in slugs}
    return set(listed) | claimed


def pack_report(
    cluster: Cluster,
    *,
    dialect: str,
    mode: str,
    user: AbstractBaseUser | AnonymousUser | None = None,
    record: bool = True,
) -> PackReport:
    """Generate the pack, store it if it changed (`record`), and preview it against the last
    sync; for a tenant viewer the preview keeps their tenants' namespaces only."""
    check_arguments(dialect, mode)
    posture = posture_inputs(cluster)
    inputs = pack_inputs(cluster, posture)
    objects = build_pack(inputs, dialect=dialect, mode=mode)
    text = pack_yaml(objects)
    digest = pack_hash(text)
    rows = preview(objects, posture)
    allowed = visible_namespaces(user, posture) if user is not None else None
    if allowed is not None:
        rows = [r for r in rows if r["namespace"] in allowed]
    report = PackReport(
        cluster=cluster,
        dialect=dialect,
        mode=mode,
        objects=objects,
        yaml=text,
        sha256=digest,
        rows=rows,
        unpreviewed=pack_rules(objects)[1],
        tenants=len(inputs.tenants),
    )
    if record:
        _, previous = generated_pack_record(
            cluster=cluster, dialect=dialect, mode=mode, content=text, sha256=digest, user=user
        )
        if previous is not None:
            report.previous_sha256 = previous.sha256
            report.diff = list(
                difflib.unified_diff(
                    previous.content.splitlines(),
                    text.splitlines(),
                    fromfile=f"previous ({previous.sha256[:12]})",
                    tofile=f"now ({digest[:12]})",
                    lineterm="",
                    n=2,
                )
            )
    return report
