"""Whether anything of a tenant was seen on a cluster read (docs/scoring.md, "Observed").

Once any cluster has been read every tenant is scored: one with nothing on any cluster read
gets 0 risk points, 100 and grade A. That is what was read, not a measurement of the tenant
(its namespaces may be on a cluster never read), so the API and the pages say which it is.

A tenant is **observed** when some namespace of it was seen by a successful sync of some
cluster (a pod of its; a namespace of its registry list; a namespace labelled for it that the
registry gives no one) or a finding it counts (open or accepted) affects it. Every inventory
row stored is a successful sync's: a failed sync keeps the last good inventory."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, QuerySet
from django.db.models.fields.json import KeyTextTransform, KeyTransform

from inventory.models import Cluster, ClusterObject, Pod, SyncRun
from posture.currency import COUNTED
from posture.models import FindingTenant
from tenants.mapping import TENANT_LABEL
from tenants.models import Tenant, TenantNamespace


def observed_expression() -> ExpressionWrapper:
    """`observed` for a Tenant queryset's annotate: EXISTS subqueries of the same SELECT (no
    query of its own), cheapest first (a tenant's pods and finding links are indexed by it;
    the namespace objects are read only for a tenant with neither)."""
    pods = Pod.objects.filter(tenant=OuterRef("pk"))
    affected = FindingTenant.objects.filter(tenant=OuterRef("pk"), finding__status__in=COUNTED)
    namespaces = _namespace_objects()
    listed = TenantNamespace.objects.filter(
        tenant=OuterRef("pk"), name__in=namespaces.values("name")
    )
    # A label claims only a namespace the registry gives no tenant (tenants.mapping: the
    # registry wins); one the registry gives this tenant is `listed` already.
    labelled = (
        namespaces.annotate(claim=KeyTextTransform(TENANT_LABEL, KeyTransform("labels", "data")))
        .filter(claim=OuterRef("slug"))
        .exclude(name__in=TenantNamespace.objects.values("name"))
    )
    seen = Exists(pods) | Exists(affected) | Exists(listed) | Exists(labelled)
    return ExpressionWrapper(seen, output_field=BooleanField())


def _namespace_objects() -> QuerySet[ClusterObject]:
    # Read through the (cluster, kind, namespace, name) index, a cluster at a time: by kind
    # alone SQLite scans every stored object of every cluster.
    return ClusterObject.objects.filter(
        cluster__in=Cluster.objects.values("pk"), kind=ClusterObject.Kind.NAMESPACE, namespace=""
    )


def labelled_namespaces(slugs: Iterable[str] | None = None) -> dict[str, list[str]]:
    """slug -> the namespaces a synced cluster labels `gpuposture.io/tenant=<slug>` that the
    registry gives no tenant (the registry wins: tenants.mapping), sorted; one query. Every
    slug's where `slugs` is None (a caller reading only the tenants it may show)."""
    wanted = None if slugs is None else set(slugs)
    # Every labelled namespace, the slugs kept here: an IN on a JSON key's text reads its
    # values as JSON on SQLite ("malformed JSON" for a bare slug).
    rows = (
        _namespace_objects()
        .annotate(claim=KeyTextTransform(TENANT_LABEL, KeyTransform("labels", "data")))
        .filter(claim__isnull=False)
        .exclude(name__in=TenantNamespace.objects.values("name"))
        .order_by()
        .values_list("claim", "name")
        .distinct()
    )
    found: dict[str, set[str]] = {}
    for slug, name in rows:
        if wanted is None or slug in wanted:
            found.setdefault(slug, set()).add(name)
    return {slug: sorted(names) for slug, names in found.items()}


def with_observed(tenants: QuerySet[Tenant]) -> QuerySet[Tenant]:
    return tenants.annotate(observed=observed_expression())


def tenant_observed(tenant: Tenant) -> bool:
    """The tenant's `observed`, as annotated by the query that fetched it, else one query."""
    known = getattr(tenant, "observed", None)
    if known is not None:
        return bool(known)
    found = with_observed(Tenant.objects.filter(pk=tenant.pk)).values_list("observed", flat=True)
    return bool(found.first())


def clusters_never_read(user: Any) -> list[str]:
    """The names of the clusters `user` may see that no sync has read yet (one query)."""
    read = SyncRun.objects.filter(status=SyncRun.Status.SUCCEEDED).values("cluster_id")
    clusters = Cluster.objects.visible_to(user).exclude(pk__in=read)
    return list(clusters.order_by("name").values_list("name", flat=True))
