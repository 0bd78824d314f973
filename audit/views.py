"""The audit log page: auditors and security leads only."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from audit.filters import AuditEventFilter
from audit.selectors import audit_event_rows, audit_events_for
from gpuposture.base.decorators import role_required
from gpuposture.base.roles import AUDIT_READERS

PAGE_SIZE = 50


@role_required(*sorted(AUDIT_READERS))
def audit_log(request: HttpRequest) -> HttpResponse:
    filterset = AuditEventFilter(request.GET, queryset=audit_events_for(request.user))
    page = Paginator(filterset.qs.order_by("-id"), PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "filter": filterset,
        "page": page,
        "rows": audit_event_rows(list(page.object_list)),
        "query": query.urlencode(),
        "filtered": any(request.GET.get(name) for name in filterset.form.fields),
    }
    return render(request, "audit/event_list.html", context)
