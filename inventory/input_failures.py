"""Input a command refused (DCGM-Exporter metrics, nvidia-smi XML), recorded where a person can
see it later: an audit event `import_failed` on the cluster, which the cluster's page lists and
`/api/v1/audit-events/?action=import_failed` answers. The command still exits non-zero with
its message and stores nothing of the input; the record says it was tried, with what and why
it was refused, as a failed sync's SyncRun and a refused CSAF import's entry do. An event, not
a model of its own: it is a fact about one attempt, with nothing later to update."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from django.db.models import QuerySet

from audit.models import AuditEvent
from audit.services import audit_record
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
    after = {"input": what, "source": without_credentials(source), "error": error[:2000]}
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
    """A URL's user and password never reach the log; a file path is kept as given."""
    parts = urlsplit(source)
    if not parts.scheme or "@" not in parts.netloc:
        return source
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
