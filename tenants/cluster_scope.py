"""Which namespace names a tenant viewer may not read in ONE cluster. PURE.

A namespace belongs to a tenant by the registry (in any cluster) or by its label, and the label
is a cluster's own: `shared-batch` may be one tenant's on one cluster, another's on a second
and nobody's (the unclassified party's) on a third. A row of one cluster is hidden by what the
names are in that cluster; a row of no cluster by their union in all (tenants.redaction
`HiddenScope.namespaces`, failing closed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

_NONE: frozenset[str] = frozenset()


@dataclass(frozen=True, eq=False)
class ClusterNamespaces:
    """What decides a cluster's hidden namespaces, read in the scope's one query
    (inventory.presenter): per cluster id, the namespaces of the hidden tenants' pods, of the
    viewer's own tenants' pods and those no tenant claims there; the registered ones (in every
    cluster); and the clusters the viewer may see, by name (a row may name its cluster)."""

    registered: frozenset[str] = _NONE  # the hidden tenants' registry namespaces
    own_registered: frozenset[str] = _NONE
    theirs: Mapping[int, frozenset[str]] = field(default_factory=dict)
    own: Mapping[int, frozenset[str]] = field(default_factory=dict)
    unclaimed: Mapping[int, frozenset[str]] = field(default_factory=dict)
    ids: Mapping[str, int] = field(default_factory=dict)  # cluster name -> id

    def cluster_id(self, cluster: object) -> int | None:
        """The id of the cluster a row names (its id, or its name), or None where it names
        none the viewer may see: such a row keeps the union."""
        if isinstance(cluster, bool):
            return None
        if isinstance(cluster, int):
            return cluster if cluster in self._known else None
        if isinstance(cluster, str):
            return self.ids.get(cluster)
        return None

    @cached_property
    def _known(self) -> frozenset[int]:
        return frozenset(self.ids.values())

    @property
    def hides_any(self) -> bool:
        """Whether a cluster hides a name the union may not (one no tenant claims there)."""
        return any(self.unclaimed.values())

    def hidden(self, cluster_id: int) -> frozenset[str]:
        """The hidden tenants' namespaces (registered, or holding their pods in this cluster)
        and those no tenant claims in it, less the viewer's own here (registered, or holding
        their pods in this cluster) unless a hidden tenant's pods hold it here too (fail
        closed)."""
        theirs = self.theirs.get(cluster_id, _NONE)
        own = (self.own_registered | self.own.get(cluster_id, _NONE)) - theirs
        return (self.registered | theirs | self.unclaimed.get(cluster_id, _NONE)) - own
