"""What a live sync says on its run about a kind it could not read. PURE: texts only.

inventory.sources.kube tolerates some failed lists (DRA and the REFUSABLE_KINDS when refused, the
admission kinds whatever the failure): the rest of the cluster is still read, and every run that
did not read such a kind says so here, naming what goes unjudged (docs/clusters.md), at the full
list that failed and at each watch re-sync after it.
"""

from __future__ import annotations

from inventory.sources.kube_admission import is_admission_label, resource_of
from inventory.sources.kube_kinds import DRA_KINDS, REFUSABLE_KINDS

LIMIT = 600


def unread_warning(kind: str, error: str, plural: str = "") -> str:
    """The run's warning for a kind (listing label) whose list failed with `error`."""
    if is_admission_label(kind):
        return admission_warning(resource_of(kind, plural), error)
    if kind in DRA_KINDS:
        what = f"Dynamic Resource Allocation: {kind} (resource.k8s.io) could not be listed, "
        return f"{what}so GPUs held through DRA claims are not seen: {error}"[:LIMIT]
    return f"{kind} could not be listed, so {REFUSABLE_KINDS[kind]}: {error}"[:LIMIT]


def admission_warning(resource: str, error: str) -> str:
    """An admission kind (`resource`: group/plural) not read: K8S-009 cannot pass on it."""
    return (
        f"{resource} could not be listed, so K8S-009 judges admission control as unknown in "
        f"every namespace it does not see enforced otherwise: {error}"
    )[:LIMIT]


def unwatched_warning(kind: str, error: str) -> str:
    """A kind the account may no longer watch: the objects of its last list are kept, and
    said to be possibly out of date, rather than dropped or silently kept."""
    if is_admission_label(kind):
        judged = "K8S-009 judges admission control by them"
    elif kind in DRA_KINDS:
        judged = "the GPUs their claims hold are judged by them"
    else:
        judged = "the checks reading them judge by them"
    return (
        f"{kind} could not be watched, so its objects are as the last full list read them, "
        f"maybe out of date, and {judged} until it can be read again: {error}"
    )[:LIMIT]
