"""REST API for findings and tenant posture."""

from __future__ import annotations

from django.conf import settings
from django.db.models import F, Prefetch
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuposture.base.api import NameOrIdLookupMixin, ScopedReadOnlyViewSet
from gpuposture.base.pagination import CataloguePagination
from gpuposture.base.roles import TRIAGE_FINDINGS
from inventory.models import Cluster
from inventory.presenter import hidden_scope_for, visible_namespaces_for
from posture.acceptance import acceptance_day, acceptance_until
from posture.catalogue import by_control, catalogue
from posture.checklist import cluster_checklist
from posture.current_reads import SweepsBeforeReading
from posture.exports import FORMATS, batched, export_refusal, export_text
from posture.filters import FindingFilter
from posture.finding_rows import (
    PagedFindingValues,
    by_id,
    finding_rows,
    finding_rows_streamed,
    finding_values,
    used_checks,
)
from posture.models import EarlierAcceptance, Finding
from posture.observed import labelled_namespaces, with_observed
from posture.policy_reports import REPORT_FORMATS
from posture.read_cache import shared_read
from posture.rules import CHECKS
from posture.selectors import checklist_facts, tenant_posture, with_latest_score
from posture.serializers import (
    OBSERVED_HELP,
    FindingDetailSerializer,
    FindingSerializer,
    NotScoredReasonField,
    PostureSerializer,
    ScoreField,
)
from posture.services import AcceptanceError, finding_accept, finding_reopen
from tenants.api import TenantSerializer, TenantViewSet
from tenants.models import Tenant


class AcceptSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000)
    until = serializers.CharField(
        max_length=64,
        help_text="The last day of the acceptance, YYYY-MM-DD (a date-time: its UTC date), "
        "from tomorrow on; it lasts to the end of that day, UTC.",
    )


ONE_FINDING = ("retrieve", "accept", "reopen")


class FindingViewSet(SweepsBeforeReading, ScopedReadOnlyViewSet):
    """Findings; security leads accept a risk (with a reason and an expiry) or reopen it."""

    # The links too: a tenant's own exposure where it has one (its share of `risk`).
    queryset = Finding.objects.select_related("cluster", "owner").prefetch_related(
        "tenants__trust_class", "tenant_links"
    )
    serializer_class = FindingSerializer
    filterset_class = FindingFilter
    write_roles = TRIAGE_FINDINGS

    def get_serializer_class(self) -> type[FindingSerializer]:
        # One finding (read, accepted or reopened) also shows the earlier acceptances of the
        # narrower findings it spans (one query more); a list does not.
        if self.action in ONE_FINDING:
            return FindingDetailSerializer
        return FindingSerializer

    def get_queryset(self):
        queryset = super().get_queryset()
        if self.action in ONE_FINDING:
            earlier = EarlierAcceptance.objects.select_related("accepted_by")
            queryset = queryset.prefetch_related(Prefetch("earlier_acceptances", queryset=earlier))
        return queryset

    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        # The page's links name the host, so the host is part of what is cached.
        key = ("findings", request.get_host(), request.get_full_path())
        return Response(shared_read(request.user, key, lambda: self._list_data(request)))

    def _list_data(self, request: Request) -> object:
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(PagedFindingValues(queryset))
        scope = hidden_scope_for(request.user)
        if page is None:
            return finding_rows(finding_values(queryset), scope)
        return self.get_paginated_response(finding_rows(page, scope)).data

    @extend_schema(request=AcceptSerializer, responses=FindingDetailSerializer)
    @action(detail=True, methods=["post"])
    def accept(self, request: Request, pk: str | None = None) -> Response:
        body = AcceptSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        finding = self.get_object()
        try:
            # The page's rule (posture.acceptance): a day from tomorrow, to its end (UTC).
            data = body.validated_data
            until = acceptance_until(acceptance_day(data["until"]))
            finding = finding_accept(
                finding=finding, user=request.user, reason=data["reason"], until=until
            )
        except AcceptanceError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(self.get_serializer(finding).data)

    @extend_schema(request=None, responses=FindingDetailSerializer)
    @action(detail=True, methods=["post"])
    def reopen(self, request: Request, pk: str | None = None) -> Response:
        finding = finding_reopen(finding=self.get_object(), user=request.user)
        return Response(self.get_serializer(finding).data)

    @extend_schema(
        parameters=[OpenApiParameter("format", enum=[*FORMATS], default="json")],
        responses={
            (200, "application/json"): FindingSerializer(many=True),
            (200, "text/csv"): str,
            (200, "application/sarif+json"): dict,
        },
    )
    @action(detail=False, methods=["get"], url_path="export", pagination_class=None)
    def export(self, request: Request) -> HttpResponse | StreamingHttpResponse:
        """All findings the filters select (not paginated), as JSON, CSV, SARIF 2.1.0 or
        Kubernetes policy reports (`openreports`: openreports.io/v1alpha1 Report and
        ClusterReport; `policyreport`: wgpolicyk8s.io/v1alpha2) as JSON, one report or a
        `{"apiVersion": "v1", "kind": "List", "items": [...]}` of them (`kubectl apply -f`
        takes either);
        at most GPUPOSTURE_EXPORT_MAX_ROWS of them (more: a 400 asking to filter). A tenant
        viewer's reports hold their own namespaces only."""
        kind = request.query_params.get("format", "json")
        if kind not in FORMATS:
            return Response({"detail": f"format must be one of {', '.join(FORMATS)}"}, status=400)
        queryset = self.filter_queryset(self.get_queryset())
        queryset = by_id(queryset)
        refusal = export_refusal(queryset.count(), settings.GPUPOSTURE_EXPORT_MAX_ROWS)
        if refusal:
            return Response({"detail": refusal}, status=400)
        rows = finding_rows_streamed(queryset, hidden_scope_for(request.user))
        used = used_checks(queryset) if kind == "sarif" else ()
        content_type, filename = FORMATS[kind]
        response = StreamingHttpResponse(
            batched(export_text(kind, rows, used, CHECKS, **_report_options(request, kind))),
            content_type=f"{content_type}; charset=utf-8",
        )
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


def _report_options(request: Request, kind: str) -> dict:
    """What a policy-report export needs beyond the rows: each result's link to its finding
    in the API, and the namespaces a tenant viewer may see (None: every namespace)."""
    if kind not in REPORT_FORMATS:
        return {}
    return {
        "link": request.build_absolute_uri("/api/v1/findings/"),
        "namespaces": visible_namespaces_for(request.user),
    }


class TenantWithScoreSerializer(TenantSerializer):
    """A tenant with its latest risk points, score and grade (null until first scored)."""

    risk = serializers.FloatField(source="latest_risk", read_only=True, allow_null=True)
    score = ScoreField(source="latest_score", read_only=True, allow_null=True)
    grade = serializers.CharField(source="latest_grade", read_only=True, allow_null=True)
    scored = serializers.SerializerMethodField(
        help_text="False until a score run has scored the tenant."
    )
    not_scored_reason = NotScoredReasonField(risk_attr="latest_risk")
    observed = serializers.BooleanField(read_only=True, help_text=OBSERVED_HELP)
    labelled_namespaces = serializers.SerializerMethodField(
        help_text="The namespaces of `namespaces` it owns by a cluster's `gpuposture.io/tenant` "
        "label, not by the registry (a PUT of them back leaves them claimed by the label)."
    )

    class Meta(TenantSerializer.Meta):
        fields = [
            *TenantSerializer.Meta.fields,
            "risk",
            "score",
            "grade",
            "scored",
            "not_scored_reason",
            "observed",
            "labelled_namespaces",
        ]

    def get_scored(self, tenant: Tenant) -> bool:
        return tenant.latest_risk is not None

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_namespaces(self, tenant: Tenant) -> list[str]:
        """Those the registry lists and those a synced cluster labels `gpuposture.io/tenant`
        for it (DESIGN §7: a tenant owns both), sorted."""
        listed = super().get_namespaces(tenant)
        return sorted({*listed, *self._labelled(tenant)})

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_labelled_namespaces(self, tenant: Tenant) -> list[str]:
        return self._labelled(tenant)

    def _labelled(self, tenant: Tenant) -> list[str]:
        if tenant.is_system:
            return []
        return self.context.get("labelled_namespaces", {}).get(tenant.slug, [])


class TenantPostureViewSet(SweepsBeforeReading, TenantViewSet):
    """Tenants with their latest risk points, score and grade, plus each tenant's posture:
    contributions and live findings."""

    serializer_class = TenantWithScoreSerializer

    def get_serializer_context(self) -> dict:
        # Every tenant's (one query): the serializer reads only the tenants shown, which the
        # queryset has already limited to those this user may see.
        return {**super().get_serializer_context(), "labelled_namespaces": labelled_namespaces()}

    def claimed_by_label(self, tenant: Tenant) -> set[str]:
        return set(labelled_namespaces([tenant.slug]).get(tenant.slug, []))

    def get_queryset(self):
        # Most risk points first (DESIGN §6: tenants are ordered by risk), never-scored last,
        # the slug breaking ties so pages are stable.
        ranked = (F("latest_risk").desc(nulls_last=True), "slug")
        return with_observed(with_latest_score(super().get_queryset())).order_by(*ranked)

    @extend_schema(responses=PostureSerializer)
    @action(detail=True, methods=["get"])
    def posture(self, request: Request, pk: str | None = None) -> Response:
        tenant = self.get_object()
        context = {"hidden_scope": hidden_scope_for(request.user)}
        return Response(PostureSerializer(tenant_posture(tenant), context=context).data)


class CheckSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    severity = serializers.CharField()
    scope = serializers.CharField()
    rationale = serializers.CharField()
    remediation = serializers.CharField()
    mappings = serializers.ListField(child=serializers.CharField())
    open_findings = serializers.IntegerField()
    exempted_last_run = serializers.IntegerField()


class ControlSerializer(serializers.Serializer):
    control = serializers.CharField()
    framework = serializers.CharField()
    checks = serializers.ListField(child=serializers.CharField())
    open_findings = serializers.IntegerField()


class CheckViewSet(viewsets.GenericViewSet):
    """The check catalogue: every check with its rationale, remediation, mappings and how
    many open findings (that you may see) it has; `frameworks/` groups them by control.
    Paginated like every list (DESIGN §8), one page holding the whole catalogue."""

    lookup_value_regex = "[A-Za-z0-9-]+"
    serializer_class = CheckSerializer
    pagination_class = CataloguePagination
    filter_backends = ()  # a catalogue from code: no queryset to filter

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(catalogue(request.user))
        return self.get_paginated_response(CheckSerializer(page, many=True).data)

    @extend_schema(responses=CheckSerializer)
    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        entry = next((c for c in catalogue(request.user) if c["id"] == (pk or "").upper()), None)
        if entry is None:
            return Response({"detail": f"no check {pk!r}"}, status=status.HTTP_404_NOT_FOUND)
        return Response(CheckSerializer(entry).data)

    @extend_schema(responses=ControlSerializer(many=True))
    @action(detail=False, methods=["get"], pagination_class=None)  # a short list of controls
    def frameworks(self, request: Request) -> Response:
        return Response(ControlSerializer(by_control(request.user), many=True).data)


class ChecklistItemSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    title = serializers.CharField()
    status = serializers.ChoiceField(choices=["pass", "fail", "unknown"])
    evidence = serializers.DictField()


class ClusterChecklistView(NameOrIdLookupMixin, generics.GenericAPIView):
    """The practitioner checklist of one cluster (DESIGN §6): ten items, pass / fail /
    unknown, with the evidence behind each."""

    queryset = Cluster.objects.all()
    lookup_field = "name"
    serializer_class = ChecklistItemSerializer
    pagination_class = None  # ten items, always

    def get_queryset(self):
        return Cluster.objects.visible_to(self.request.user)

    @extend_schema(responses=ChecklistItemSerializer(many=True))
    def get(self, request: Request, name: str) -> Response:
        items = cluster_checklist(checklist_facts(self.get_object(), request.user))
        return Response(ChecklistItemSerializer([item.__dict__ for item in items], many=True).data)
