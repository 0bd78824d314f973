"""The one presenter of what a reader sees of other tenants (tenants.redaction holds the
rule). Pages, API, exports and charts all go through it:

- `hidden_scope_for(user)`: the names a user may not see, in one query (None for those who
  read every tenant, who see everything as stored);
- `present(scope, item)`: one model instance, value row or serialized dict with its model's
  `redacted_fields` hidden (in place; returns it);
- `PresentedSerializer`: a ModelSerializer mixin that presents every row it writes.

It lives in inventory, the lowest layer that knows both the tenants and the pods (a namespace
belongs to a tenant by the registry or by its label, which only the synced pods record)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from django.conf import settings
from django.db import models
from django.db.models import Q, Value
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Concat
from rest_framework import serializers

from gpuposture.base.querysets import sees_every_row
from inventory.binding_names import their_bindings, their_pods
from inventory.models import Bulletin, Cluster, ClusterObject, Pod
from inventory.platform import cluster_platform_namespaces
from tenants.cluster_scope import ClusterNamespaces
from tenants.mapping import DEFAULT_PLATFORM_NAMESPACES, TENANT_LABEL
from tenants.models import Tenant, TenantNamespace, TenantPrincipal
from tenants.redaction import Field, HiddenScope

T = TypeVar("T")
_TENANT, _NAMESPACE, _PRINCIPAL, _OWN_NAMESPACE = "t", "n", "p", "o"
# A hidden tenant's display name, and one of the viewer's own (kept whole in text).
_NAME, _OWN_NAME = "m", "w"
# A bulletin's tracking id, and its CVEs (JSON text) when hidden or shown.
_ADVISORY, _HIDDEN_CVES, _SHOWN_CVES = "a", "h", "s"
# A namespace no tenant claims, as "<cluster id>:<namespace>" (its party: _unclaimed).
_UNCLAIMED = "u"
# A namespace holding a hidden tenant's pods, or the viewer's own tenants' pods, as
# "<cluster id>:<namespace>" (a label is one cluster's); a visible cluster as "<id>:<name>".
_THEIR_PODS, _OWN_PODS, _CLUSTER = "N", "O", "c"
# Pods' names: a hidden tenant's, the viewer's own, and one no tenant claims as
# "<cluster id>:<namespace>/<name>" (hidden where its namespace is the unclassified party's).
_THEIR_POD, _OWN_POD, _UNCLAIMED_POD = "P", "Q", "U"


def hidden_scope_for(user) -> HiddenScope | None:
    """What `user` must not see named: every tenant they may not see, with its namespaces
    (registered, or holding its pods) and principals, the namespaces no tenant claims that
    are not the platform's (the unclassified party is another party: _unclaimed), and every
    bulletin they may not read (its tracking id, and the CVEs no bulletin they read names).
    One query (a UNION), and where a namespace no tenant claims may be the platform's, the
    platform namespaces of its cluster (inventory.platform)."""
    if sees_every_row(user, Tenant) and sees_every_row(user, Bulletin):
        return None
    hidden = Tenant.objects.exclude(pk__in=Tenant.objects.visible_to(user).values("pk"))
    mine = hidden.values("pk")

    def tagged(queryset: models.QuerySet, tag: str, column: Any) -> models.QuerySet:
        return queryset.order_by().annotate(tag=Value(tag), word=column).values_list("tag", "word")

    principals = TenantPrincipal.objects.filter(tenant__in=mine)
    # The viewer's own namespaces too, in the same query: a binding there is theirs to read.
    own = Tenant.objects.visible_to(user).values("pk")
    rows = tagged(hidden, _TENANT, models.F("slug")).union(
        tagged(hidden, _NAME, models.F("name")),
        tagged(Tenant.objects.visible_to(user), _OWN_NAME, models.F("name")),
        tagged(TenantNamespace.objects.filter(tenant__in=mine), _NAMESPACE, models.F("name")),
        tagged(Pod.objects.filter(tenant__in=mine), _THEIR_PODS, _in_cluster("namespace")),
        tagged(TenantNamespace.objects.filter(tenant__in=own), _OWN_NAMESPACE, models.F("name")),
        tagged(Pod.objects.filter(tenant__in=own), _OWN_PODS, _in_cluster("namespace")),
        tagged(Pod.objects.filter(tenant__in=mine), _THEIR_POD, models.F("name")),
        tagged(Pod.objects.filter(tenant__in=own), _OWN_POD, models.F("name")),
        # A namespace a tenant claims by its label in one cluster, pods or none.
        tagged(_labelled_for(hidden), _THEIR_PODS, _in_cluster("name")),
        tagged(_labelled_for(Tenant.objects.visible_to(user)), _OWN_PODS, _in_cluster("name")),
        tagged(principals, _PRINCIPAL, models.F("name")),
        tagged(principals, _PRINCIPAL, Concat("kind", Value(":"), "name")),
        # Those who read every tenant read the unclassified party too (a lead short of a
        # bulletin's TLP only).
        *([] if sees_every_row(user, Tenant) else _unclaimed_words(user, tagged)),
        *_bulletin_words(user, tagged),
    )
    found: dict[str, set[str]] = {
        tag: set()
        for tag in (
            _TENANT,
            _NAME,
            _OWN_NAME,
            _NAMESPACE,
            _PRINCIPAL,
            _OWN_NAMESPACE,
            _ADVISORY,
            _HIDDEN_CVES,
            _UNCLAIMED,
            _THEIR_PODS,
            _OWN_PODS,
            _CLUSTER,
            _THEIR_POD,
            _OWN_POD,
            _UNCLAIMED_POD,
        )
    }
    shown_cves: set[str] = set()
    for tag, word in rows:
        if tag in (_HIDDEN_CVES, _SHOWN_CVES):
            cves = _cve_list(word)
            (found[_HIDDEN_CVES] if tag == _HIDDEN_CVES else shown_cves).update(cves)
        else:
            found[tag].add(word)
    clusters = _cluster_namespaces(found)
    # Rows of no cluster: every cluster's at once, failing closed: a name another party's (a
    # hidden tenant's, or nobody's) in any cluster is hidden, though the viewer's elsewhere.
    theirs = found[_NAMESPACE] | _union(clusters.theirs)
    own = found[_OWN_NAMESPACE] | _union(clusters.own)
    unclaimed = _union(clusters.unclaimed)
    return HiddenScope(
        tenants=frozenset(found[_TENANT] | found[_NAME]),
        namespaces=frozenset(theirs | unclaimed),
        principals=frozenset(found[_PRINCIPAL]),
        objects=their_bindings(found[_PRINCIPAL], theirs | unclaimed, own),
        typed_objects=their_pods(
            found[_THEIR_POD], found[_OWN_POD], found[_UNCLAIMED_POD], clusters.unclaimed
        ),
        advisories=frozenset(found[_ADVISORY]),
        cves=frozenset(found[_HIDDEN_CVES] - shown_cves),
        names=frozenset(found[_NAME]),
        own_names=frozenset(found[_OWN_NAME]),
        clusters=clusters,
    )


def _labelled_for(tenants: models.QuerySet) -> models.QuerySet:
    """The synced namespaces whose `gpuposture.io/tenant` label names one of `tenants`, and
    that the registry gives no one: a registered namespace is its tenant's in every cluster,
    whatever its label says (tenants.mapping), so a stray label neither shows another tenant's
    names to the label's viewer nor hides a tenant's own namespace from its own."""
    labelled = ClusterObject.objects.annotate(owner=KT(f"data__labels__{TENANT_LABEL}"))
    return labelled.filter(
        kind=ClusterObject.Kind.NAMESPACE, owner__in=tenants.values("slug")
    ).exclude(name__in=TenantNamespace.objects.values("name"))


def _in_cluster(column: str) -> Concat:
    return Concat(Cast("cluster_id", models.CharField()), Value(":"), column)


def _by_cluster(words: Iterable[str]) -> dict[int, set[str]]:
    """ "<cluster id>:<word>" words as cluster id -> words."""
    out: dict[int, set[str]] = {}
    for word in words:
        cluster_id, _, rest = word.partition(":")
        if rest and cluster_id.isdigit():
            out.setdefault(int(cluster_id), set()).add(rest)
    return out


def _union(by_cluster: Mapping[int, Iterable[str]]) -> set[str]:
    return set().union(*by_cluster.values())


def _cluster_namespaces(found: Mapping[str, set[str]]) -> ClusterNamespaces:
    """What the namespaces are in each cluster (tenants.cluster_scope), from the UNION's rows."""
    theirs, own = _by_cluster(found[_THEIR_PODS]), _by_cluster(found[_OWN_PODS])
    registered = found[_NAMESPACE] | found[_OWN_NAMESPACE]
    claimed = {c: theirs.get(c, set()) | own.get(c, set()) for c in {*theirs, *own}}
    freeze = frozenset
    return ClusterNamespaces(
        registered=freeze(found[_NAMESPACE]),
        own_registered=freeze(found[_OWN_NAMESPACE]),
        theirs={c: freeze(names) for c, names in theirs.items()},
        own={c: freeze(names) for c, names in own.items()},
        unclaimed=_unclaimed(found[_UNCLAIMED], registered, claimed),
        ids={name: c for c, names in _by_cluster(found[_CLUSTER]).items() for name in names},
    )


def _unclaimed_words(user, tagged) -> list[models.QuerySet]:
    """The parts of the UNION that read the namespaces no tenant claims, each as
    "<cluster id>:<namespace>": those of pods no tenant claims, and the synced namespaces
    neither registered nor labelled for a tenant (one may hold bindings or quotas only). Only
    on the clusters `user` may see: nothing they read is of another cluster."""
    clusters = Cluster.objects.visible_to(user).values("pk")
    where = Concat(Cast("cluster_id", models.CharField()), Value(":"), "namespace")
    named = Concat(Cast("cluster_id", models.CharField()), Value(":"), "name")
    # A label naming no tenant claims nothing (DESIGN §2: the label names a real tenant).
    namespaces = (
        ClusterObject.objects.annotate(owner=KT(f"data__labels__{TENANT_LABEL}"))
        .filter(kind=ClusterObject.Kind.NAMESPACE, cluster__in=clusters)
        .exclude(name__in=TenantNamespace.objects.values("name"))
        # Written so, not as exclude(): NOT IN is unknown (so false) for an unlabelled one.
        .filter(Q(owner__isnull=True) | ~Q(owner__in=Tenant.objects.values("slug")))
    )
    unclaimed_pods = Pod.objects.filter(tenant__isnull=True, cluster__in=clusters)
    return [
        tagged(unclaimed_pods, _UNCLAIMED, where),
        tagged(
            # Not the Kubernetes defaults' pods: never the unclassified party's, and many.
            unclaimed_pods.exclude(namespace__in=DEFAULT_PLATFORM_NAMESPACES),
            _UNCLAIMED_POD,
            Concat(where, Value("/"), "name"),
        ),
        tagged(namespaces, _UNCLAIMED, named),
        tagged(
            Cluster.objects.visible_to(user),
            _CLUSTER,
            Concat(Cast("pk", models.CharField()), Value(":"), "name"),
        ),
    ]


def _unclaimed(
    found: set[str], registered: set[str], claimed: Mapping[int, set[str]]
) -> dict[int, frozenset[str]]:
    """Per cluster id, the namespaces no tenant claims there that are not the platform's: the
    unclassified party's (DESIGN §3), another party to a tenant viewer, hidden as another
    tenant's are. The platform's own (the Kubernetes defaults, GPUPOSTURE_PLATFORM_NAMESPACES,
    the labelled ones, the GPU stack's as found: inventory.platform) stay named: they are
    nobody's, and a viewer needs them to act on what a finding says of the device plugin or the
    operator. `found` holds "<cluster id>:<namespace>"; a name in the registry (any cluster's)
    or holding a tenant's pods in that cluster (`claimed`, by cluster id) is decided as the
    tenant's. The platform namespaces are read only for a cluster holding a candidate the cheap
    sets do not settle (a query or two for each such cluster)."""
    plain = DEFAULT_PLATFORM_NAMESPACES | set(settings.GPUPOSTURE_PLATFORM_NAMESPACES) | registered
    candidates = {
        cluster_id: names - plain - claimed.get(cluster_id, set())
        for cluster_id, names in _by_cluster(found).items()
    }
    return {
        cluster_id: frozenset(names - cluster_platform_namespaces(Cluster(pk=cluster_id)))
        for cluster_id, names in candidates.items()
        if names
    }


def _bulletin_words(user, tagged) -> list[models.QuerySet]:
    """The parts of the UNION that read the bulletins `user` may not read: their tracking ids
    and CVEs, and the CVEs of those they read (a CVE a readable bulletin names is not hidden).
    None when they read every bulletin."""
    if sees_every_row(user, Bulletin):
        return []
    shown = Bulletin.objects.visible_to(user)
    hidden = Bulletin.objects.exclude(pk__in=shown.values("pk"))
    cves = Cast("cves", models.TextField())
    return [
        tagged(hidden, _ADVISORY, models.F("tracking_id")),
        tagged(hidden, _HIDDEN_CVES, cves),
        tagged(shown, _SHOWN_CVES, cves),
    ]


def _cve_list(text: str | list) -> list[str]:
    """A bulletin's CVEs read as text from the UNION (a backend may hand back the list)."""
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return []
    return [c for c in value if isinstance(c, str)] if isinstance(value, list) else []


def visible_namespaces_for(user) -> frozenset[str] | None:
    """The namespaces of the tenants `user` may see (registered, or holding their pods), or
    None for those who read every tenant: what a per-namespace export gives a tenant viewer.
    One query (a UNION)."""
    if sees_every_row(user, Tenant):
        return None
    mine = Tenant.objects.visible_to(user).values("pk")
    rows = (
        TenantNamespace.objects.filter(tenant__in=mine)
        .order_by()
        .values_list("name", flat=True)
        .union(Pod.objects.filter(tenant__in=mine).order_by().values_list("namespace", flat=True))
    )
    return frozenset(rows)


class _Instance:
    """A model instance seen as the row `HiddenScope.fields` rewrites: a foreign key reads as
    the related object's slug, and a hidden one is replaced by an unsaved stand-in whose slug
    and name are the token (a template reads `reset.previous_tenant.slug` unchanged)."""

    def __init__(self, instance: models.Model) -> None:
        self.instance = instance

    def get(self, name: str) -> Any:
        value = getattr(self.instance, name)
        if isinstance(value, models.Manager):
            return None  # a many-to-many (a finding's tenants): pages list what they may see
        return value.slug if isinstance(value, models.Model) else value

    def __setitem__(self, name: str, value: Any) -> None:
        current = getattr(self.instance, name)
        if isinstance(current, models.Manager):
            return
        if isinstance(current, models.Model):
            if value != current.slug:
                setattr(self.instance, name, type(current)(slug=value, name=value))
        elif value is not current:
            setattr(self.instance, name, value)


def present(scope: HiddenScope | None, item: T, model: type[models.Model] | None = None) -> T:
    """`item` (a model instance, or a dict row of `model`) with what `scope` hides replaced,
    in place. The declaration is the model's `redacted_fields`. An item of one cluster (an
    instance with `cluster_id`, a row with `cluster_id` or `cluster`, its id or name) is
    hidden by what the names are in that cluster; one of none by the union."""
    if scope is None or scope.empty:
        return item
    if isinstance(item, models.Model):
        model = type(item)
        row: Any = _Instance(item)
        cluster = getattr(item, "cluster_id", None)
    else:
        row = item
        cluster = item.get("cluster_id", item.get("cluster"))
    scope = scope.in_cluster(cluster)
    scope.fields(row, model.redacted_fields)
    _fit(row, model)
    return item


def _fit(row: Any, model: type[models.Model]) -> None:
    """A hidden name's token is longer than most names ("(another tenant)" for "qa"): a text
    that grew past its column's length is cut to it, so what a reader gets still fits what the
    schema says of the field."""
    for name, kind in model.redacted_fields.items():
        limit = getattr(model._meta.get_field(name), "max_length", None)
        value = row.get(name) if kind in (Field.TEXT, Field.TYPED) and limit else None
        if isinstance(value, str) and len(value) > limit:
            row[name] = value[: limit - 1] + "…"


def present_all(scope: HiddenScope | None, items: Iterable[T], model=None) -> list[T]:
    return [present(scope, item, model) for item in items]


def scope_in(context: dict) -> HiddenScope | None:
    """The viewer's scope for a serializer: the view's, or built once from the request (and
    kept in the context the rows of a list share). No request (a command): nothing hidden."""
    if "hidden_scope" not in context:
        request = context.get("request")
        context["hidden_scope"] = hidden_scope_for(request.user) if request else None
    return context["hidden_scope"]


class PresentedSerializer(serializers.ModelSerializer):
    """Writes each row through `present`, with the model's `redacted_fields` (and the scope of
    the instance's cluster, where it has one)."""

    def to_representation(self, instance: models.Model) -> dict:
        data = super().to_representation(instance)
        scope = scope_in(self.context)
        cluster = getattr(instance, "cluster_id", None)
        if scope is not None and cluster is not None:
            scope = scope.in_cluster(cluster)
        return present(scope, data, self.Meta.model)


# What the sync recorded of why a node's facts read as they do (inventory.snapshot.Node):
# free text that may name another tenant's claim ("DRA: ResourceClaim beta-prod/infer ...").
NODE_BASES = ("gpu_count_basis", "sharing_basis", "gpu_model_basis", "driver_version_basis")


def node_basis(node: Any, key: str, scope: HiddenScope | None) -> str | None:
    """The node's recorded basis `key` (NODE_BASES) as `scope` may read it in the node's cluster;
    None where the sync recorded none (the labels decide the fact, or it was synced before bases
    were kept)."""
    text = node.data.get(key) or None
    return scope.in_cluster(node.cluster_id).text(text) if text and scope is not None else text
