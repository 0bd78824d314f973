"""REST API for bulletins and their import records: list, import (a document, or URLs a worker
fetches), delete (a security lead). Revisions held for confirmation: revision_api.py."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from gpuposture.base.api import ScopedReadOnlyViewSet, ScopedViewSetMixin
from gpuposture.base.queue import QueueUnavailable
from gpuposture.base.roles import DECIDE_BULLETINS, IMPORT_BULLETINS, may
from inventory.api import RETRY_LATER
from inventory.bulletins.decisions import bulletin_delete
from inventory.bulletins.imports import bulletin_urls_import_request, bulletins_import_recorded
from inventory.bulletins.revision_api import held_answer
from inventory.filters import BulletinFilter
from inventory.models import Bulletin, BulletinFix, BulletinImport

MAX_IMPORT_URLS = 20


class BulletinFixSerializer(serializers.ModelSerializer):
    class Meta:
        model = BulletinFix
        fields = [
            "kind",
            "platform",
            "branch",
            "line",
            "host",
            "affected_op",
            "affected_version",
            "condition",
            "fixed_version",
            "cves",
            "max_cvss",
            "severity",
            "warning",
            "no_fix",
            "remedies",
        ]


class BulletinSerializer(serializers.ModelSerializer):
    fixes = BulletinFixSerializer(many=True, read_only=True)

    class Meta:
        model = Bulletin
        fields = [
            "id",
            "tracking_id",
            "title",
            "category",
            "version",
            "initial_release_date",
            "current_release_date",
            "aggregate_severity",
            "tracking_status",
            "tlp",
            "cves",
            "fixes",
            "unmatched",
            "source",
            "imported_at",
        ]


class BulletinImportSerializer(serializers.ModelSerializer):
    class Meta:
        model = BulletinImport
        fields = [
            "id",
            "action",
            "trigger",
            "requested_by",
            "sources",
            "status",
            "counts",
            "bulletins",
            "changes",
            "refused",
            "resolved_findings",
            "error",
            "started_at",
            "finished_at",
        ]


class BulletinViewSet(
    ScopedViewSetMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Vendor bulletins (CSAF 2.0). POST a CSAF JSON document to import it; a newer revision
    replaces an older one, an invalid document is refused with the reason. A newer revision
    that weakens a fix (a lower fixed version; a product, branch or CVE dropped) is held (202)
    until a security lead confirms it at /api/v1/bulletin-revisions/{id}/confirm/. DELETE
    (security lead) removes a bulletin. Each is recorded at /api/v1/bulletin-imports/."""

    queryset = Bulletin.objects.prefetch_related("fixes")
    serializer_class = BulletinSerializer
    write_roles = IMPORT_BULLETINS
    filterset_class = BulletinFilter

    @extend_schema(request=dict, responses={201: BulletinSerializer, 202: dict, 400: dict})
    def create(self, request: Request, *args, **kwargs) -> Response:
        if isinstance(request.data, dict) and "urls" in request.data:
            return self._import_urls(request.data["urls"])
        record, result = bulletins_import_recorded(
            trigger="api", actor=request.user, documents=[("api upload", request.data)]
        )
        if not result.landed:
            reason = result.refused[0][1]
            what = "not imported" if "is 'draft'" in reason else "not a valid CSAF 2.0 document"
            return Response(
                {"detail": f"{what}: {reason}"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        if result.held:
            return Response(held_answer(record), status=status.HTTP_202_ACCEPTED)
        [tracking_id] = [*result.imported, *result.replaced, *result.unchanged]
        bulletin = self.get_queryset().get(tracking_id=tracking_id)
        code = status.HTTP_200_OK if result.unchanged else status.HTTP_201_CREATED
        return Response(BulletinSerializer(bulletin).data, status=code)

    @extend_schema(responses={200: BulletinImportSerializer, 403: dict})
    def destroy(self, request: Request, *args, **kwargs) -> Response:
        if not may(request.user, DECIDE_BULLETINS):
            raise PermissionDenied("Only a security lead may delete a bulletin.")
        record = bulletin_delete(bulletin=self.get_object(), user=request.user, trigger="api")
        return Response(BulletinImportSerializer(record).data)

    def _import_urls(self, urls: object) -> Response:
        """`{"urls": [...]}`: documents or provider feeds, fetched by a worker through the
        SSRF guard; answers 202 with the import to follow at /api/v1/bulletin-imports/{id}/."""
        if not (
            isinstance(urls, list)
            and 0 < len(urls) <= MAX_IMPORT_URLS
            and all(isinstance(u, str) and 0 < len(u) <= 2000 for u in urls)
        ):
            return Response(
                {"detail": f"urls must be a list of 1 to {MAX_IMPORT_URLS} URL strings"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        try:
            record = bulletin_urls_import_request(urls=urls, trigger="api", actor=self.request.user)
        except QueueUnavailable as exc:
            body = {"detail": str(exc), "import": BulletinImportSerializer(exc.record).data}
            return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE, headers=RETRY_LATER)
        record.refresh_from_db()  # eager mode (no broker) has already run it
        return Response(BulletinImportSerializer(record).data, status=status.HTTP_202_ACCEPTED)


class BulletinImportViewSet(ScopedReadOnlyViewSet):
    """Bulletin imports (CLI, API, upload form, feed schedule): what was asked, what landed,
    what was refused and why."""

    queryset = BulletinImport.objects.all()
    serializer_class = BulletinImportSerializer
    filterset_fields = {"status": ["exact"], "trigger": ["exact"]}
