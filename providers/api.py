"""REST API for providers, questionnaires and assessments (DESIGN §8)."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuposture.base.api import ScopedReadOnlyViewSet, ScopedViewSetMixin
from gpuposture.base.querysets import sees_every_row
from gpuposture.base.roles import EDIT_PROVIDERS, REVIEW_ASSESSMENTS
from providers.assessments import (
    AssessmentError,
    NotAllowed,
    answers_save,
    assessment_review,
    assessment_start,
    assessment_submit,
)
from providers.exports import assessment_export, import_answers_csv
from providers.filters import AssessmentFilter
from providers.models import Answer, Assessment, Provider, ProviderContact, Questionnaire
from providers.selectors import provider_standing
from providers.services import provider_save


def _refusal(exc: AssessmentError) -> Exception:
    if isinstance(exc, NotAllowed):
        return exceptions.PermissionDenied(str(exc))
    return exceptions.ValidationError({"detail": str(exc)})


def sees_full_provider(user) -> bool:
    return sees_every_row(user, Provider)


# --- providers -------------------------------------------------------------------------------


class ContactSerializer(serializers.ModelSerializer):
    class Meta:
        model = ProviderContact
        fields = ["name", "email", "phone", "role"]


class ProviderSummarySerializer(serializers.ModelSerializer):
    """What a tenant viewer hosted by the provider may know: who, and whether it is assessed."""

    standing = serializers.SerializerMethodField()

    class Meta:
        model = Provider
        fields = ["id", "slug", "name", "standing"]

    def get_standing(self, provider: Provider) -> dict:
        return provider_standing(provider, self.context["now"])


class ProviderSerializer(ProviderSummarySerializer):
    contacts = ContactSerializer(many=True, required=False)
    clusters = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)

    class Meta:
        model = Provider
        fields = [
            "id",
            "slug",
            "name",
            "website",
            "contact_name",
            "contact_email",
            "notes",
            "contacts",
            "clusters",
            "standing",
        ]

    def create(self, validated_data: dict) -> Provider:
        contacts = validated_data.pop("contacts", [])
        actor = self.context["request"].user
        return provider_save(provider=None, values=validated_data, contacts=contacts, actor=actor)

    def update(self, instance: Provider, validated_data: dict) -> Provider:
        contacts = validated_data.pop("contacts", None)  # absent: the contacts stay
        actor = self.context["request"].user
        return provider_save(
            provider=instance, values=validated_data, contacts=contacts, actor=actor
        )


class ProviderViewSet(
    ScopedViewSetMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Providers with their contacts, hosted clusters and assessment standing. Procurement
    registers and edits them; a tenant viewer sees only the summary of providers hosting a
    cluster their tenant runs on."""

    queryset = Provider.objects.prefetch_related("contacts", "clusters", "assessments")
    lookup_field = "slug"
    write_roles = EDIT_PROVIDERS

    def get_serializer_class(self):
        if sees_full_provider(self.request.user):
            return ProviderSerializer
        return ProviderSummarySerializer

    def get_serializer_context(self) -> dict:
        return {**super().get_serializer_context(), "now": timezone.now()}


# --- questionnaires --------------------------------------------------------------------------


class QuestionnaireSerializer(serializers.ModelSerializer):
    class Meta:
        model = Questionnaire
        fields = [
            "id",
            "slug",
            "version",
            "title",
            "description",
            "license",
            "source",
            "question_count",
            "loaded_at",
            "spec",
        ]


class QuestionnaireViewSet(ScopedReadOnlyViewSet):
    """Questionnaire versions (load them with `manage.py load_questionnaires`)."""

    queryset = Questionnaire.objects.all()
    serializer_class = QuestionnaireSerializer
    filterset_fields = ["slug", "version", "source"]


# --- assessments -----------------------------------------------------------------------------


class AnswerSerializer(serializers.ModelSerializer):
    evidence_files = serializers.SerializerMethodField()

    class Meta:
        model = Answer
        fields = [
            "question_id",
            "value",
            "note",
            "evidence_url",
            "evidence_files",
            "review_comment",
            "updated_at",
        ]

    def get_evidence_files(self, answer: Answer) -> list[dict]:
        return [
            {
                "id": f.pk,
                "name": f.original_name,
                "content_type": f.content_type,
                "size": f.size,
                "sha256": f.sha256,
            }
            for f in answer.files.all()
        ]


class AssessmentSerializer(serializers.ModelSerializer):
    provider = serializers.SlugRelatedField(slug_field="slug", queryset=Provider.objects.all())
    questionnaire = serializers.PrimaryKeyRelatedField(
        queryset=Questionnaire.objects.all(), required=False
    )
    answers = AnswerSerializer(many=True, read_only=True)
    submitted_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    reviewed_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    # Empty until procurement records who answered: not always an email address.
    responder_email = serializers.CharField(read_only=True)

    class Meta:
        model = Assessment
        fields = [
            "id",
            "provider",
            "questionnaire",
            "status",
            "responder_name",
            "responder_email",
            "responded_on",
            "created_at",
            "updated_at",
            "submitted_by",
            "submitted_at",
            "reviewed_by",
            "reviewed_at",
            "review_comment",
            "expires_at",
            "score",
            "category_scores",
            "red_flags",
            "answers",
        ]
        read_only_fields = [
            "status",
            "responder_name",
            "responder_email",
            "responded_on",
            "submitted_at",
            "reviewed_at",
            "review_comment",
            "expires_at",
            "score",
            "category_scores",
            "red_flags",
        ]


MAX_ANSWERS_PER_CALL = 600  # more than any questionnaire has; bounds one request's work


def _bounded(value: dict) -> dict:
    if len(value) > MAX_ANSWERS_PER_CALL:
        raise serializers.ValidationError(f"at most {MAX_ANSWERS_PER_CALL} per call")
    if any(len(str(key)) > 40 for key in value):
        raise serializers.ValidationError("question ids are at most 40 characters")
    return value


class AnswerInputSerializer(serializers.Serializer):
    value = serializers.JSONField(required=False, allow_null=True)
    note = serializers.CharField(required=False, allow_blank=True, max_length=4000)
    evidence_url = serializers.CharField(required=False, allow_blank=True, max_length=500)


class AnswersSerializer(serializers.Serializer):
    answers = serializers.DictField(child=AnswerInputSerializer())
    responder_name = serializers.CharField(required=False, max_length=120)
    responder_email = serializers.EmailField(required=False)
    responded_on = serializers.DateField(required=False)

    def validate_answers(self, value: dict) -> dict:
        return _bounded(value)


class ReviewSerializer(serializers.Serializer):
    # DRF's own message ("is not a valid choice") leaves the caller guessing the values.
    decision = serializers.ChoiceField(
        choices=["accept", "send_back"],
        error_messages={"invalid_choice": '"{input}" is not a decision: one of accept, send_back'},
    )
    comment = serializers.CharField(required=False, allow_blank=True, max_length=4000)
    answer_comments = serializers.DictField(
        child=serializers.CharField(max_length=2000, allow_blank=True), required=False
    )

    def validate_answer_comments(self, value: dict) -> dict:
        return _bounded(value)


class AssessmentViewSet(ScopedViewSetMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Assessments: procurement starts one, saves answers (partial saves report per-question
    errors), submits; a security lead accepts or sends it back with comments per answer."""

    queryset = Assessment.objects.select_related(
        "provider", "questionnaire", "submitted_by", "reviewed_by"
    ).prefetch_related("answers__files")
    serializer_class = AssessmentSerializer
    filterset_class = AssessmentFilter

    @property
    def write_roles(self) -> tuple[str, ...]:  # type: ignore[override]  # a property: roles per action
        return REVIEW_ASSESSMENTS if self.action == "review" else EDIT_PROVIDERS

    def perform_create(self, serializer: AssessmentSerializer) -> None:  # type: ignore[override]  # always the serializer_class
        provider = get_object_or_404(
            Provider.objects.visible_to(self.request.user),
            pk=serializer.validated_data["provider"].pk,
        )
        try:
            serializer.instance = assessment_start(
                provider=provider,
                user=self.request.user,
                questionnaire=serializer.validated_data.get("questionnaire"),
            )
        except AssessmentError as exc:
            raise _refusal(exc) from exc

    def _fresh(self, assessment: Assessment) -> Response:
        return Response(self.get_serializer(self.get_queryset().get(pk=assessment.pk)).data)

    @extend_schema(request=AnswersSerializer, responses=dict)
    @action(detail=True, methods=["post", "patch"])
    def answers(self, request: Request, pk: str | None = None) -> Response:
        """Save some answers (autosave): `{"answers": {"GPU-PART-01": {"value": "mig_gi",
        "note": "...", "evidence_url": "https://..."}}}`; refused ones come back in `errors`."""
        from providers.assessments import assessment_attest

        body = AnswersSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        assessment = self.get_object()
        data = body.validated_data
        try:
            result = answers_save(assessment=assessment, user=request.user, answers=data["answers"])
            if data.get("responder_name") and data.get("responded_on"):
                assessment_attest(
                    assessment=assessment,
                    user=request.user,
                    responder_name=data["responder_name"],
                    responder_email=data.get("responder_email", ""),
                    responded_on=data["responded_on"],
                )
        except AssessmentError as exc:
            raise _refusal(exc) from exc
        return Response({"saved": result.saved, "errors": result.errors})

    @extend_schema(request=None, responses=AssessmentSerializer)
    @action(detail=True, methods=["post"])
    def submit(self, request: Request, pk: str | None = None) -> Response:
        try:
            assessment = assessment_submit(assessment=self.get_object(), user=request.user)
        except AssessmentError as exc:
            raise _refusal(exc) from exc
        return self._fresh(assessment)

    @extend_schema(request=ReviewSerializer, responses=AssessmentSerializer)
    @action(detail=True, methods=["post"])
    def review(self, request: Request, pk: str | None = None) -> Response:
        # The assessment first: an unknown or hidden one is a 404 whatever the body says.
        assessment = self.get_object()
        body = ReviewSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            assessment = assessment_review(
                assessment=assessment,
                user=request.user,
                accept=data["decision"] == "accept",
                comment=data.get("comment", ""),
                answer_comments=data.get("answer_comments"),
            )
        except AssessmentError as exc:
            raise _refusal(exc) from exc
        return self._fresh(assessment)

    @extend_schema(responses={(200, "text/csv"): str, (200, "application/json"): dict})
    @action(detail=True, methods=["get"])
    def export(self, request: Request, pk: str | None = None) -> HttpResponse:
        """The filled assessment as `?format=csv` (spreadsheet-safe) or `?format=json`."""
        fmt = request.query_params.get("format", "json")
        if fmt not in ("csv", "json"):
            raise exceptions.ValidationError({"detail": "format is csv or json"})
        return assessment_export(self.get_object(), fmt)

    @extend_schema(request={"multipart/form-data": dict}, responses=dict)
    @action(detail=True, methods=["post"], url_path="import")
    def import_csv(self, request: Request, pk: str | None = None) -> Response:
        """Answers from the export's CSV (field `file`); errors are listed per row."""
        upload = request.FILES.get("file")
        if upload is None:
            raise exceptions.ValidationError({"detail": "attach the CSV as the `file` field"})
        try:
            outcome = import_answers_csv(
                assessment=self.get_object(), user=request.user, upload=upload
            )
        except AssessmentError as exc:
            raise _refusal(exc) from exc
        return Response(outcome, status=200 if not outcome["errors"] else 400)
