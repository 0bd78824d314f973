"""Where each role lands after signing in (/home/): the first things its day needs.

The security lead's day starts on the ranked risk overview and a tenant viewer's on their
tenant's page (the tenants page when they view several), so /home/ shows those pages as they
are; the platform engineer, procurement and the auditor get a page built from the same scoped
selectors the full pages use (nothing here widens a scope). A user with several roles lands on
the first of HOME_ORDER they hold.
"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from audit.selectors import audit_event_rows, audit_events_for
from gpuposture.base.roles import (
    AUDITOR,
    PLATFORM_ENGINEER,
    PROCUREMENT,
    SECURITY_LEAD,
    TENANT_VIEWER,
    user_roles,
)
from inventory.models import Node
from posture.catalogue import by_control
from posture.currency import clusters_currency
from posture.tenant_list import tenant_list
from posture.views import overview, tenant_detail
from providers.models import Assessment, Provider
from tenants.models import SharingRequest, Tenant

HOME_ORDER = (SECURITY_LEAD, PLATFORM_ENGINEER, PROCUREMENT, AUDITOR, TENANT_VIEWER)
RENEWAL_WINDOW = timedelta(days=60)  # an accepted questionnaire this close to expiry is due
LIST_LIMIT = 10  # rows per section; each section links to its full page


def home_role(user) -> str | None:
    if user.is_superuser:
        return SECURITY_LEAD
    roles = user_roles(user)
    return next((role for role in HOME_ORDER if role in roles), None)


def home(request: HttpRequest) -> HttpResponse:
    role = home_role(request.user)
    if role == SECURITY_LEAD or role is None:
        # No role: the overview says why there is nothing to show (base.html).
        return overview(request)
    if role == TENANT_VIEWER:
        return _tenant_home(request)
    context = {
        PLATFORM_ENGINEER: platform_home,
        PROCUREMENT: procurement_home,
        AUDITOR: auditor_home,
    }[role](request.user)
    return render(request, f"posture/home_{role}.html", context)


def _tenant_home(request: HttpRequest) -> HttpResponse:
    slugs = list(Tenant.objects.visible_to(request.user).values_list("slug", flat=True)[:2])
    if len(slugs) == 1:
        return tenant_detail(request, slug=slugs[0])
    # Several tenants (or none yet): the tenants page lists exactly the ones they view.
    return tenant_list(request)


def platform_home(user) -> dict:
    pending = SharingRequest.objects.visible_to(user).pending()
    nodes = Node.objects.visible_to(user).filter(is_gpu_node=True)
    below = nodes.filter(patch_status="below_baseline").select_related("cluster")
    patch_counts: dict[str, int] = {}
    other_vendor_nodes = 0  # AMD, Intel, Gaudi nodes: GPU nodes whose stack is not read
    counted = (
        Node.objects.visible_to(user)
        .filter(is_accelerator_node=True)
        .values_list("is_gpu_node", "patch_status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for is_nvidia, status, n in counted:
        if is_nvidia:
            patch_counts[status] = n
        else:
            other_vendor_nodes += n
    return {
        "pending": pending.select_related("tenant", "cluster", "requested_by").order_by(
            "requested_at", "id"
        )[:LIST_LIMIT],
        "pending_count": pending.count(),
        "currency": clusters_currency(user),
        "patch_counts": patch_counts,
        "other_vendor_nodes": other_vendor_nodes,
        "below": below.order_by("cluster__name", "name")[:LIST_LIMIT],
    }


def procurement_home(user) -> dict:
    now = timezone.now()
    assessments = Assessment.objects.visible_to(user).select_related("provider", "questionnaire")
    editable = Q(status__in=[Assessment.Status.DRAFT, Assessment.Status.RETURNED])
    due = Q(status=Assessment.Status.ACCEPTED, expires_at__lte=now + RENEWAL_WINDOW)
    covered = Assessment.objects.accepted_unexpired(now).values("provider_id")
    return {
        "to_fill": assessments.filter(editable).order_by("status", "-updated_at")[:LIST_LIMIT],
        "renewals": assessments.filter(due).order_by("expires_at")[:LIST_LIMIT],
        "uncovered": Provider.objects.visible_to(user)
        .exclude(pk__in=covered)
        .annotate(cluster_count=Count("clusters"))
        .order_by("name")[:LIST_LIMIT],
        "submitted": assessments.filter(status=Assessment.Status.SUBMITTED).count(),
        "now": now,
    }


def auditor_home(user) -> dict:
    events = list(audit_events_for(user).order_by("-id")[:LIST_LIMIT])
    controls = sorted(by_control(user), key=lambda c: (-c["open_findings"], c["control"]))
    return {
        "rows": audit_event_rows(events),
        "controls": [c for c in controls if c["open_findings"]][:LIST_LIMIT],
    }
