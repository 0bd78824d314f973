"""The demo's sharing requests: approved, pending, denied, revoked and expired ones, so the
approvals queue, SHARE-004 and DRIFT-004 all have something real to show.

Made through the same services a person uses (four eyes and trust-class refusals apply, and
each decision is an audit event); only the clinical approval is then dated back, so that it
has expired by the time the demo is looked at.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model

from inventory.models import Cluster
from sharing.services import (
    sharing_request_approve,
    sharing_request_create,
    sharing_request_deny,
    sharing_request_revoke,
)
from tenants.models import SharingRequest, Tenant


@dataclass(frozen=True)
class DemoRequest:
    tenant: str
    cluster: str
    pool: str
    mode: str
    asked_by: str
    why: str
    decision: str = ""  # "", "approve", "deny", "approve+revoke"
    decided_by: str = "platform-engineer-2"
    reason: str = ""
    age_days: int = 0  # dated back this far after being made


REQUESTS = (
    DemoRequest(
        "research",
        "prod-east",
        "research-ts",
        "time_slicing",
        "platform-engineer",
        "Notebook and evaluation jobs use a fraction of an A100 each; one team, reviewed code.",
        "approve",
        reason="Single-tenant pool, failRequestsGreaterThanOne set.",
        age_days=40,
    ),
    DemoRequest(
        "research",
        "neo-west",
        "research-mps",
        "mps",
        "platform-engineer",
        "Batch inference with many small CUDA clients; MPS gives better throughput.",
        "approve",
        reason="Research only, dedicated pool; revisit with Blackwell MIG.",
        age_days=30,
    ),
    DemoRequest(
        "orbital",
        "prod-east",
        "external-a100",
        "mig_gi",
        "viewer-orbital",
        "Our alignment jobs fit in 3g.40gb instances; whole A100s would sit half idle.",
        "approve",
        decided_by="platform-engineer",
        reason="GPU instances are hardware-isolated.",
        age_days=60,
    ),
    DemoRequest(
        "analytics",
        "prod-east",
        "shared-ts",
        "mig_gi",
        "platform-engineer",
        "Feature pipelines need 1g.10gb instances, not whole GPUs.",
        "approve",
        reason="Approved on MIG; the pool must not be time-sliced.",
        age_days=20,
    ),
    DemoRequest(
        "clinical",
        "prod-east",
        "sensitive-h100",
        "mig_gi",
        "viewer-clinical",
        "Segmentation models on de-identified studies; one 1g.10gb instance per model.",
        "approve",
        decided_by="platform-engineer",
        reason="Dedicated tainted pool, resets recorded.",
        age_days=100,
    ),
    DemoRequest(
        "clinical",
        "prod-east",
        "sensitive-h100",
        "mig_gi",
        "viewer-clinical",
        "Renewal: the approval of the segmentation models' MIG instances expired.",
        age_days=2,
    ),
    DemoRequest(
        "analytics",
        "neo-west",
        "",
        "vgpu_fixed",
        "platform-engineer",
        "Dashboards' GPU rendering on the provider's vGPU nodes, fixed share scheduler.",
        age_days=1,
    ),
    DemoRequest(
        "kestrel",
        "neo-west",
        "",
        "mig_gi",
        "platform-engineer",
        "Kestrel's pilot asks for 2g.35gb instances on H200.",
        "deny",
        reason="No capacity in the external pool at the provider until Q1.",
        age_days=10,
    ),
    DemoRequest(
        "analytics",
        "neo-west",
        "analytics-ts",
        "vgpu_equal",
        "platform-engineer",
        "Trial of equal-share vGPU for the notebook pool.",
        "approve+revoke",
        reason="Trial approved for two weeks.",
        age_days=14,
    ),
)


def load_demo_requests() -> int:
    """Make the demo requests once; a second `demo` run leaves them (and their audit trail)."""
    if SharingRequest.objects.exists():
        return 0
    users = {u.username: u for u in get_user_model().objects.all()}
    tenants = {t.slug: t for t in Tenant.objects.select_related("trust_class")}
    clusters = {c.name: c for c in Cluster.objects.all()}
    for spec in REQUESTS:
        request = sharing_request_create(
            tenant=tenants[spec.tenant],
            cluster=clusters[spec.cluster],
            node_pool=spec.pool,
            mode=spec.mode,
            justification=spec.why,
            user=users[spec.asked_by],
        )
        _decide(request, spec, users)
        if spec.age_days:
            _date_back(request, timedelta(days=spec.age_days))
    return len(REQUESTS)


def _decide(request: SharingRequest, spec: DemoRequest, users: dict) -> None:
    decider = users[spec.decided_by]
    if spec.decision.startswith("approve"):
        sharing_request_approve(request=request, user=decider, reason=spec.reason)
    elif spec.decision == "deny":
        sharing_request_deny(request=request, user=decider, reason=spec.reason)
    if spec.decision.endswith("+revoke"):
        sharing_request_revoke(
            request=request,
            user=users["security-lead"],
            reason="Trial over; the notebooks moved to whole GPUs.",
        )


def _date_back(request: SharingRequest, age: timedelta) -> None:
    request.refresh_from_db()
    shift = {"requested_at": request.requested_at - age}
    for name in ("decided_at", "expires_at"):
        if getattr(request, name):
            shift[name] = getattr(request, name) - age
    SharingRequest.objects.filter(pk=request.pk).update(**shift)
