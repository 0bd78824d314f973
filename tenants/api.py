"""REST API for trust classes and tenants (sharing requests: sharing/api.py)."""

from __future__ import annotations

from django.db.models import Q
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from gpuposture.base.api import NameOrIdLookupMixin, ScopedReadOnlyViewSet
from gpuposture.base.enums import FindingStatus
from gpuposture.base.filters import FilterSet
from gpuposture.base.finding_status import status_q
from gpuposture.base.roles import EDIT_TENANTS, EDIT_TRUST_CLASSES, reads_all_posture
from tenants.filters import trust_class_filter
from tenants.models import Tenant, TrustClass
from tenants.policy import SHARING_MODES
from tenants.services import tenant_update, tenants_apply, trust_class_update
from tenants.spec import TenantSpecError, parse_tenants_document


class TrustClassSerializer(serializers.ModelSerializer):
    allowed_modes = serializers.ListField(child=serializers.ChoiceField(choices=SHARING_MODES))
    same_class_only_modes = serializers.ListField(
        child=serializers.ChoiceField(choices=SHARING_MODES), required=False
    )
    approved_registries = serializers.ListField(
        child=serializers.CharField(max_length=253), required=False
    )
    pool_taints = serializers.ListField(child=serializers.CharField(), required=False)

    class Meta:
        model = TrustClass
        fields = [
            "id",
            "slug",
            "name",
            "description",
            "allowed_modes",
            "same_class_only_modes",
            "requires_dedicated_pool",
            "requires_reset_attestation",
            "approval_expiry_days",
            "rank",
            "risk_weight",
            "approved_registries",
            "require_image_digest",
            "pool_taints",
        ]


class TrustClassUpdateSerializer(TrustClassSerializer):
    """What PATCH changes: every field the admin edits. The slug is the class's stable id
    (tenants, settings and pool taints name it): giving another one is refused."""

    def validate_slug(self, value: str) -> str:
        if self.instance is not None and value != self.instance.slug:
            raise serializers.ValidationError(
                f"{value!r} differs from {self.instance.slug!r}: a trust class's slug is its "
                "stable id and never changes."
            )
        return value

    def validate(self, attrs: dict) -> dict:
        attrs.pop("slug", None)
        allowed = attrs.get("allowed_modes", self.instance.allowed_modes)
        same_only = attrs.get("same_class_only_modes", self.instance.same_class_only_modes)
        # A same-class-only mode is a limit on an allowed one (tenants.policy reads it so).
        outside = sorted(set(same_only) - set(allowed))
        if outside:
            raise serializers.ValidationError(
                {
                    "same_class_only_modes": [
                        f"{', '.join(outside)} not in allowed_modes: a same-class-only mode "
                        "must also be allowed."
                    ]
                }
            )
        return attrs


class TenantSerializer(serializers.ModelSerializer):
    trust_class = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    namespaces = serializers.SerializerMethodField()
    principals = serializers.SerializerMethodField()
    viewers = serializers.SerializerMethodField(
        help_text="gpuposture usernames assigned to the tenant (the tenants file's `viewers`); "
        "shown to roles that read every tenant, left out for tenant viewers."
    )

    class Meta:
        model = Tenant
        fields = ["id", "slug", "name", "trust_class", "namespaces", "principals", "viewers"]

    def to_representation(self, tenant: Tenant) -> dict:
        # A PUT of what a GET answered keeps the viewers (it empties what it leaves out); a
        # tenant viewer is not told who else may read the tenant.
        data = super().to_representation(tenant)
        request = self.context.get("request")
        if request is None or not reads_all_posture(request.user):
            data.pop("viewers", None)
        return data

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_namespaces(self, tenant: Tenant) -> list[str]:
        """The namespaces it claims; for the system tenant `unclassified`, those nobody claims
        that its findings name, as of the last score (what to claim)."""
        if tenant.is_system:
            return list(tenant.unclaimed_namespaces or [])
        return [n.name for n in tenant.namespaces.all()]

    def get_principals(self, tenant: Tenant) -> list[str]:
        return [f"{p.kind}:{p.name}" for p in tenant.principals.all()]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_viewers(self, tenant: Tenant) -> list[str]:
        # The declared names, an account or not yet: a GET put back keeps them all.
        return tenant.viewer_usernames()


class TenantSpecSerializer(serializers.Serializer):
    """One tenant as the tenants file writes it (the schema only: tenants.spec validates)."""

    slug = serializers.CharField()
    name = serializers.CharField()
    trust_class = serializers.CharField(help_text="A trust class slug.")
    namespaces = serializers.ListField(child=serializers.CharField(), required=False)
    principals = serializers.ListField(
        child=serializers.CharField(), required=False, help_text='"group:NAME" or "user:NAME"'
    )
    viewers = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="gpuposture usernames"
    )


class TrustClassViewSet(NameOrIdLookupMixin, ScopedReadOnlyViewSet):
    """Trust classes, by slug or id. A security lead changes one with PATCH (DESIGN §3 "seed
    data, editable", §6 the weights "editable with the trust classes"): audited, re-scored.
    No PUT (a class is edited, not replaced) and no DELETE (tenants hold their class)."""

    queryset = TrustClass.objects.all()
    serializer_class = TrustClassSerializer
    lookup_field = "slug"
    lookup_value_regex = "[a-z0-9_]+"
    write_roles = EDIT_TRUST_CLASSES

    @extend_schema(request=TrustClassUpdateSerializer, responses=TrustClassSerializer)
    def partial_update(self, request: Request, *args: object, **kwargs: object) -> Response:
        trust_class = self.get_object()
        body = TrustClassUpdateSerializer(trust_class, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        updated = trust_class_update(
            trust_class=trust_class, changes=body.validated_data, actor=request.user
        )
        return Response(TrustClassSerializer(updated).data)


class TenantFilter(FilterSet):
    # DESIGN §8: filters take the object's slug, as the field `trust_class` shows it; the
    # older `trust_class__slug` spelling is kept for existing clients.
    trust_class = trust_class_filter()
    trust_class__slug = trust_class_filter(label="Trust class slug (older spelling)")

    class Meta:
        model = Tenant
        fields = ["trust_class", "trust_class__slug"]


class TenantViewSet(ScopedReadOnlyViewSet):
    """Tenants. A security lead declares them with POST, in the tenants file's shape (DESIGN
    §9): one tenant (`slug`, `name`, `trust_class`, `namespaces`, `principals`, `viewers`),
    or `{"tenants": [...]}`; created or updated to match, audited, re-scored."""

    queryset = Tenant.objects.select_related("trust_class").prefetch_related(
        "namespaces", "principals", "viewer_names", "viewers"
    )
    serializer_class = TenantSerializer
    filterset_class = TenantFilter
    write_roles = EDIT_TENANTS

    @extend_schema(
        request=TenantSpecSerializer,
        responses={200: TenantSerializer, 201: TenantSerializer, 400: dict},
    )
    def create(self, request: Request, *args: object, **kwargs: object) -> Response:
        one = isinstance(request.data, dict) and "tenants" not in request.data
        document = {"tenants": [request.data]} if one else request.data
        try:
            specs = parse_tenants_document(document)
            result = tenants_apply(specs=specs, actor=request.user)
        except TenantSpecError as exc:
            return _spec_refusal(str(exc))
        code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        if one:
            tenant = self.get_queryset().get(slug=specs[0].slug)
            return Response(self.get_serializer(tenant).data, status=code)
        summary = {
            "created": result.created,
            "updated": result.updated,
            "unchanged": result.unchanged,
            "warnings": result.warnings,
        }
        return Response(summary, status=code)

    @extend_schema(request=TenantSpecSerializer, responses={200: TenantSerializer, 400: dict})
    def update(self, request: Request, *args: object, **kwargs: object) -> Response:
        """PUT: the tenant in the tenants file's shape, whole (namespaces, principals and
        viewers left out are emptied, as a POST would); PATCH: only the fields given."""
        tenant = self.get_object()
        partial = bool(kwargs.get("partial"))
        if not isinstance(request.data, dict):
            return _spec_refusal("expected a JSON object with the tenant's fields")
        # What a GET answers may come back as it was read: its read-only fields are ignored.
        read_only = set(self.get_serializer().fields) - set(TenantSpecSerializer().fields)
        changes = {k: v for k, v in request.data.items() if k not in read_only}
        # A namespace a GET lists because a cluster labels it for the tenant stays claimed by
        # its label: a GET put back does not copy it into the registry.
        by_label = self.claimed_by_label(tenant)
        if by_label and isinstance(changes.get("namespaces"), list):
            changes["namespaces"] = [n for n in changes["namespaces"] if n not in by_label]
        try:
            tenant_update(tenant=tenant, changes=changes, partial=partial, actor=request.user)
        except TenantSpecError as exc:
            return _spec_refusal(str(exc))
        return Response(self.get_serializer(self.get_queryset().get(pk=tenant.pk)).data)

    def claimed_by_label(self, tenant: Tenant) -> set[str]:
        """The namespaces the tenant owns by a cluster's label only (none known here: the
        posture app's tenants endpoint reads the synced namespaces)."""
        return set()

    @extend_schema(request=TenantSpecSerializer, responses={200: TenantSerializer, 400: dict})
    def partial_update(self, request: Request, *args: object, **kwargs: object) -> Response:
        return self.update(request, *args, partial=True, **kwargs)

    def get_queryset(self):
        # The system tenant `unclassified` is listed only while unclaimed namespaces give it
        # open findings, as on the overview: where nothing is unclassified it says nothing.
        is_open = status_q(FindingStatus.OPEN, timezone.now(), prefix="findings__")
        judged = Tenant.objects.filter(is_open, is_system=True).values("pk")
        return super().get_queryset().exclude(Q(is_system=True) & ~Q(pk__in=judged))


def _spec_refusal(message: str) -> Response:
    return Response({"detail": message}, status=status.HTTP_400_BAD_REQUEST)
