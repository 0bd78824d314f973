"""REST API for bulletin revisions held for confirmation: a security lead confirms (the
revision replaces the bulletin) or rejects (it is never applied) each one."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuposture.base.api import ScopedReadOnlyViewSet
from gpuposture.base.roles import SECURITY_LEAD
from inventory.bulletins.decisions import (
    RevisionDecisionError,
    bulletin_revision_confirm,
    bulletin_revision_reject,
)
from inventory.models import BulletinImport, BulletinRevision


class BulletinRevisionSerializer(serializers.ModelSerializer):
    class Meta:
        model = BulletinRevision
        fields = [
            "id",
            "tracking_id",
            "version",
            "base_version",
            "title",
            "source",
            "changes",
            "status",
            "held_by",
            "requested_by",
            "created_at",
            "decided_by",
            "decided_at",
            "decision_note",
        ]


class RevisionDecisionSerializer(serializers.Serializer):
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000)


def held_answer(record: BulletinImport) -> dict[str, Any]:
    """The answer to an import that held a weakening revision (202)."""
    # The changes name each hold: new ones, and one already pending when offered again.
    ids = [change["revision"] for change in record.changes if "revision" in change]
    held = BulletinRevision.objects.filter(pk__in=ids).order_by("id")
    return {
        "detail": (
            "This revision weakens the bulletin (see `weakening`); it is held, not applied, "
            "until a security lead confirms it at /api/v1/bulletin-revisions/{id}/confirm/ "
            "(or rejects it at .../reject/)."
        ),
        "import": record.pk,
        "revisions": BulletinRevisionSerializer(held, many=True).data,
    }


class BulletinRevisionViewSet(ScopedReadOnlyViewSet):
    """Bulletin revisions that weaken a fix, held until a security lead decides. POST
    `{id}/confirm/` applies one (an import of action `confirm`, re-scored); `{id}/reject/` with
    a `note` (the reason) keeps the stored revision."""

    queryset = BulletinRevision.objects.all()
    serializer_class = BulletinRevisionSerializer
    write_roles = (SECURITY_LEAD,)
    filterset_fields = {"status": ["exact"], "tracking_id": ["exact"]}

    @extend_schema(request=RevisionDecisionSerializer, responses={200: dict, 400: dict})
    @action(detail=True, methods=["post"])
    def confirm(self, request: Request, pk: str | None = None) -> Response:
        note = self._note(request)
        try:
            record = bulletin_revision_confirm(
                revision=self.get_object(), user=request.user, trigger="api", note=note
            )
        except RevisionDecisionError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        revision = self.get_object()
        return Response(
            {"revision": BulletinRevisionSerializer(revision).data, "import": record.pk}
        )

    @extend_schema(request=RevisionDecisionSerializer, responses={200: BulletinRevisionSerializer})
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str | None = None) -> Response:
        note = self._note(request)
        try:
            revision = bulletin_revision_reject(
                revision=self.get_object(), user=request.user, note=note
            )
        except RevisionDecisionError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(BulletinRevisionSerializer(revision).data)

    @staticmethod
    def _note(request: Request) -> str:
        data = request.data if isinstance(request.data, dict) else {}
        decision = RevisionDecisionSerializer(data=data)
        decision.is_valid(raise_exception=True)
        return decision.validated_data.get("note", "")
