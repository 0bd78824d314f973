"""Input a command refused (DCGM-Exporter metrics, nvidia-smi XML), recorded where a person can
see it later: an audit event `import_failed` on the cluster, which the cluster's page lists and
`/api/v1/audit-events/?action=import_failed` answers. The command still exits non-zero with
its message and stores nothing of the input; the record says it was tried, with what and why
it was refused, as a failed sync's SyncRun and a refused CSAF import's entry do. An event, not
a model of its own: it is a fact about one attempt, with nothing later to update."""

from __future__ import annotations

from django.db.models import QuerySet

from audit.models import AuditEvent
from audit.services import audit_record
from gpuposture.base.fetch import shown_url
from inventory.models import Cluster

IMPORT_FAILED = "import_failed"
DCGM = "DCGM-Exporter metrics"
NVIDIA_SMI = "nvidia-smi XML"


def import_failure_record(
    *, cluster_name: str, what: str, source: str, error: str, actor: str, **details: str
) -> AuditEvent:
    """Record a refused input for the cluster of that name; one not created (an nvidia-smi
    import for a new cluster rolls the cluster back too) is named by the event alone."""
    cluster = Cluster.objects.filter(name=cluster_name).first()
    after = {
        "input": what,
        "source": without_credentials(source),
        "error": _error_shown(error, source),
    }
    return audit_record(
        actor=actor,
        action=IMPORT_FAILED,
        obj=cluster,
        object_type=None if cluster else Cluster._meta.label_lower,
        object_repr=None if cluster else cluster_name,
        after=after | details,
    )


def import_failures(cluster: Cluster, *, limit: int = 5) -> QuerySet[AuditEvent]:
    """The cluster's latest refused inputs, newest first."""
    return AuditEvent.objects.filter(
        action=IMPORT_FAILED, object_type=Cluster._meta.label_lower, object_id=str(cluster.pk)
    ).order_by("-id")[:limit]


def without_credentials(source: str) -> str:
    """What the record keeps of the source: a URL without user info, query or fragment (each
    may carry a credential: user:password@, ?access_token=), bounded; a file path as given."""
    return shown_url(source)


def _error_shown(error: str, source: str) -> str:
    # The messages name the URL already cleaned (fetch.shown_url); the source as typed is
    # replaced too, should any message quote it whole.
    for raw in {source, source.strip()} - {""}:
        error = error.replace(raw, without_credentials(raw))
    return error[:2000]
