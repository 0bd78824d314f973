"""An exemption: a platform component a check must not report, and how a finding matches it.

PURE: no ORM, no network. posture.read_model builds them from the database; the checks
(posture.rules.registry) and enforcement's packs read them from the inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Exemption:
    """A platform component a check must not report, matched on the finding: empty fields
    match anything; `labels` must all be present on the subject. An exemption that names an
    object (a `name`) matches a workload finding when that object, of its kind and namespace
    where given, is in the owner chain of every pod the finding covers (`chain`): the subject
    itself, or a nearer controller kubectl shows in a pod's ownerReferences (a RayCluster
    under its RayService, a ReplicaSet under its Deployment, a Job under its CronJob, the Pod).
    Without a name it is matched on the subject's kind and namespace alone: `kind: Pod` still
    means bare pods, not every workload's pods."""

    id: int
    check_id: str
    namespace: str = ""
    kind: str = ""
    name: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    reason: str = ""

    def matches(
        self,
        check_id: str,
        kind: str,
        namespace: str,
        name: str,
        labels: dict,
        chain: frozenset[tuple[str, str, str]] = frozenset(),
    ) -> bool:
        """`chain`: (kind, namespace, name) of the objects in the chain of every pod the
        finding covers (FindingDraft.chain); empty for a finding that is not a workload's."""
        if self.check_id != check_id:
            return False
        if self.labels and not all(labels.get(k) == v for k, v in self.labels.items()):
            return False
        if self._names(kind, namespace, name):
            return True
        if not self.name:
            return False
        # One of the chain (a finding of no pods, a node, has none): a lookup where kind and
        # namespace are given, as they mostly are (the score matches 340,000 drafts).
        if self.kind and self.namespace:
            return (self.kind, self.namespace, self.name) in chain
        for obj_kind, obj_namespace, obj_name in chain:
            if obj_name == self.name and self._names(obj_kind, obj_namespace, obj_name):
                return True
        return False

    def _names(self, kind: str, namespace: str, name: str) -> bool:
        return (
            (not self.namespace or self.namespace == namespace)
            and (not self.kind or self.kind == kind)
            and (not self.name or self.name == name)
        )
