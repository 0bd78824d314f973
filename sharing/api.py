"""REST API for sharing requests: ask, approve, deny, revoke (DESIGN §10)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import exceptions, mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuposture.base.api import ScopedViewSetMixin
from gpuposture.base.roles import DECIDE_SHARING, REQUEST_SHARING, REVOKE_SHARING
from inventory.models import Cluster
from inventory.presenter import PresentedSerializer
from sharing.filters import SharingRequestFilter
from sharing.services import (
    FourEyesError,
    NotAllowed,
    SharingRequestError,
    sharing_request_approve,
    sharing_request_create,
    sharing_request_deny,
    sharing_request_revoke,
)
from tenants.models import SharingRequest, Tenant
from tenants.policy import REQUEST_SCOPES, SHARING_MODES


class VisibleSlugField(serializers.SlugRelatedField):
    """A slug (or name) choice limited to what the requesting user may see, so a refusal
    never tells an outsider that another tenant or cluster exists. The object's id is taken
    too (DESIGN §8: names "not only ids", so ids as well): a script holds whichever the list
    gave it. The slug is tried first, so a cluster named with digits still reaches itself."""

    def get_queryset(self):
        return super().get_queryset().visible_to(self.context["request"].user)

    def to_internal_value(self, data: object) -> object:
        as_id = _as_id(data)
        if as_id is not None:
            found = self.get_queryset().filter(**{self.slug_field: str(data)}).first()
            found = found or self.get_queryset().filter(pk=as_id).first()
            if found is not None:
                return found
        return super().to_internal_value(data)


def _as_id(data: object) -> int | None:
    """The id `data` names (7 or "7"), else None; a JSON true is not the id 1."""
    if isinstance(data, bool):
        return None
    if isinstance(data, int):
        return data
    if isinstance(data, str) and data.isdigit() and len(data) < 19:
        return int(data)
    return None


@extend_schema_field(serializers.ChoiceField(choices=SHARING_MODES))
class SharingModeField(serializers.Field):
    """`sharing_mode`, the name DESIGN §2 gives the contract, beside the stored `mode`: read,
    it repeats `mode`; written, either name may carry it (the serializer's validate() merges
    the two and refuses them when they differ)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", required=False, **kwargs)
        self.choice = serializers.ChoiceField(choices=SHARING_MODES)

    def to_representation(self, value: Any) -> str:
        return value.mode  # source="*": the sharing request itself

    def to_internal_value(self, data: Any) -> dict[str, str]:
        # source="*": what this returns is merged into validated_data.
        return {"sharing_mode": self.choice.run_validation(data)}


class SharingRequestSerializer(PresentedSerializer):
    """A request as its reader may read it: the reasons people typed are free text, read for
    other tenants' names (inventory.presenter, SharingRequest.redacted_fields)."""

    tenant = VisibleSlugField(slug_field="slug", queryset=Tenant.objects.filter(is_system=False))
    cluster = VisibleSlugField(slug_field="name", queryset=Cluster.objects.all())
    mode = serializers.ChoiceField(choices=SHARING_MODES, required=False)
    sharing_mode = SharingModeField(help_text="The same as `mode` (DESIGN §2's name); give either.")
    # Empty: the whole cluster (what is stored when no pool is named).
    node_pool = serializers.RegexField(
        r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$",
        max_length=63,
        required=False,
        allow_blank=True,
    )
    justification = serializers.CharField(max_length=2000)
    state = serializers.SerializerMethodField()
    # Derived from the tenant's CURRENT trust class (tenants.policy.request_scope):
    # `with_other_tenants` where the class allows the mode between tenants, `within_tenant`
    # where it forbids it and the approval covers the tenant's own pods only.
    scope = serializers.ChoiceField(choices=REQUEST_SCOPES, read_only=True)
    scope_rule = serializers.SerializerMethodField()
    # expires_at as decided, or sooner the ceiling of the tenant's current trust class.
    effective_expires_at = serializers.DateTimeField(
        source="effective_expiry", read_only=True, allow_null=True
    )
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    decided_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    revoked_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = SharingRequest
        fields = [
            "id",
            "tenant",
            "cluster",
            "node_pool",
            "mode",
            "sharing_mode",
            "justification",
            "status",
            "state",
            "scope",
            "scope_rule",
            "requested_by",
            "requested_at",
            "decided_by",
            "decided_at",
            "decision_reason",
            "expires_at",
            "effective_expires_at",
            "revoked_by",
            "revoked_at",
            "revoke_reason",
        ]
        read_only_fields = [
            "status",
            "requested_at",
            "decided_at",
            "decision_reason",
            "expires_at",
            "revoked_at",
            "revoke_reason",
        ]

    def validate(self, attrs: dict) -> dict:
        """One mode, named `mode` or `sharing_mode` (both only if they agree)."""
        mode, alias = attrs.get("mode"), attrs.pop("sharing_mode", None)
        if mode and alias and mode != alias:
            raise serializers.ValidationError(
                {
                    "sharing_mode": [
                        f"mode {mode!r} and sharing_mode {alias!r} differ: they name the same "
                        "thing; give one of them, or the same value in both."
                    ]
                }
            )
        if not (mode or alias):
            raise serializers.ValidationError(
                {"mode": ["This field is required (as `mode` or `sharing_mode`)."]}
            )
        attrs["mode"] = mode or alias
        return attrs

    def get_state(self, request: SharingRequest) -> str:
        return request.state(self.context["now"])

    def get_scope_rule(self, request: SharingRequest) -> str:
        """The policy's sentence for the scope (why it is limited to the tenant, if it is)."""
        return request.policy().rule


class DecisionSerializer(serializers.Serializer):
    # An approval may go without a note (the request carries its justification); a denial
    # or a revocation says why (checked in _decision, per action).
    reason = serializers.CharField(
        max_length=2000,
        required=False,
        allow_blank=True,
        default="",
        help_text="Why: required to deny or revoke, optional to approve.",
    )
    expires_in_days = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=3650,
        help_text="Approve only; at most the trust class's approval expiry.",
    )


def _refusal(exc: SharingRequestError) -> Exception:
    if isinstance(exc, FourEyesError | NotAllowed):
        return exceptions.PermissionDenied(str(exc))
    return exceptions.ValidationError({"detail": str(exc)})


class SharingRequestViewSet(
    ScopedViewSetMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet
):
    """Sharing requests: a tenant owner or platform engineer asks; another platform engineer
    approves or denies (four eyes); a platform engineer or security lead revokes."""

    queryset = SharingRequest.objects.select_related(
        "tenant__trust_class", "cluster", "requested_by", "decided_by", "revoked_by"
    )
    serializer_class = SharingRequestSerializer
    filterset_class = SharingRequestFilter

    @property
    def write_roles(self) -> tuple[str, ...]:  # type: ignore[override]  # a property: roles per action
        if self.action == "create":
            return REQUEST_SHARING
        if self.action == "revoke":
            return REVOKE_SHARING
        return DECIDE_SHARING

    def get_serializer_context(self) -> dict:
        return {**super().get_serializer_context(), "now": timezone.now()}

    def perform_create(self, serializer: SharingRequestSerializer) -> None:  # type: ignore[override]  # always the serializer_class
        data = serializer.validated_data
        try:
            serializer.instance = sharing_request_create(
                tenant=data["tenant"],
                cluster=data["cluster"],
                node_pool=data.get("node_pool", ""),
                mode=data["mode"],
                justification=data["justification"],
                user=self.request.user,
            )
        except SharingRequestError as exc:
            raise _refusal(exc) from exc

    def _decision(self, request: Request, service, **extra) -> Response:
        # The request first: an unknown or hidden one is a 404 whatever the body says.
        sharing_request = self.get_object()
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        reason = body.validated_data["reason"].strip()
        if not reason and service is not sharing_request_approve:
            raise exceptions.ValidationError(
                {"reason": ["Give a reason: a denial or a revocation says why."]}
            )
        kwargs = {"reason": reason, **extra}
        if service is sharing_request_approve:
            kwargs["expires_in_days"] = body.validated_data.get("expires_in_days")
        try:
            decided = service(request=sharing_request, user=request.user, **kwargs)
        except SharingRequestError as exc:
            raise _refusal(exc) from exc
        return Response(self.get_serializer(decided).data)

    @extend_schema(request=DecisionSerializer, responses=SharingRequestSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        return self._decision(request, sharing_request_approve)

    @extend_schema(request=DecisionSerializer, responses=SharingRequestSerializer)
    @action(detail=True, methods=["post"])
    def deny(self, request: Request, pk: str | None = None) -> Response:
        return self._decision(request, sharing_request_deny)

    @extend_schema(request=DecisionSerializer, responses=SharingRequestSerializer)
    @action(detail=True, methods=["post"])
    def revoke(self, request: Request, pk: str | None = None) -> Response:
        return self._decision(request, sharing_request_revoke)
