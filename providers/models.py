"""GPU cloud providers (neoclouds) that host clusters."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from gpuposture.base.querysets import Scope, ScopedQuerySet
from gpuposture.base.roles import reads_providers


class ProviderQuerySet(ScopedQuerySet):
    # A tenant viewer sees the providers hosting a cluster their tenant runs on, and then
    # only as a summary (providers.api).
    scope = Scope(paths=("clusters__pods__tenant",), readers=reads_providers)


class Provider(models.Model):
    """A company that hosts GPU clusters for us."""

    slug = models.SlugField(max_length=63, unique=True)
    name = models.CharField(max_length=120)
    website = models.URLField(blank=True)
    contact_name = models.CharField(max_length=120, blank=True)
    contact_email = models.EmailField(blank=True)
    notes = models.TextField(blank=True, max_length=4000)

    objects = ProviderQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name


class ProviderContact(models.Model):
    """A person at the provider to ask: security questions, incidents, the contract."""

    class Role(models.TextChoices):
        SECURITY = "security", "Security"
        INCIDENT = "incident", "Incident response"
        COMMERCIAL = "commercial", "Commercial"
        TECHNICAL = "technical", "Technical"

    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="contacts")
    name = models.CharField(max_length=120)
    email = models.EmailField(blank=True)
    phone = models.CharField(max_length=40, blank=True)
    role = models.CharField(max_length=12, choices=Role.choices, default=Role.SECURITY)

    class Meta:
        ordering = ["role", "name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"


class QuestionnaireQuerySet(ScopedQuerySet):
    scope = Scope(readers=reads_providers)


class Questionnaire(models.Model):
    """One version of a questionnaire, frozen once loaded: answers keep the version they were
    given to (providers/library/*.yaml, or a user's own catalogue in the same shape)."""

    class Source(models.TextChoices):
        LIBRARY = "library", "Shipped with gpuposture"
        IMPORTED = "imported", "Imported by a user"

    slug = models.SlugField(max_length=63)
    version = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True, max_length=4000)
    license = models.CharField(max_length=500, blank=True)
    spec = models.JSONField(help_text="The questionnaire as providers.questionnaire_spec reads it.")
    spec_hash = models.CharField(max_length=64)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.LIBRARY)
    question_count = models.PositiveIntegerField(default=0)
    loaded_at = models.DateTimeField(auto_now_add=True)

    objects = QuestionnaireQuerySet.as_manager()

    class Meta:
        ordering = ["slug", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["slug", "version"], name="questionnaire_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.slug} v{self.version}"


class AssessmentQuerySet(ScopedQuerySet):
    scope = Scope(readers=reads_providers)

    def accepted_unexpired(self, now):
        return self.filter(status=Assessment.Status.ACCEPTED, expires_at__gt=now)


class Assessment(models.Model):
    """A provider's answers to one questionnaire version: filled by procurement, attested in
    writing by the provider's responder, reviewed by a security lead."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted for review"
        RETURNED = "returned", "Sent back"
        ACCEPTED = "accepted", "Accepted"

    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="assessments")
    questionnaire = models.ForeignKey(
        Questionnaire, on_delete=models.PROTECT, related_name="assessments"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    # The "in writing" attestation: who at the provider gave these answers, and when.
    responder_name = models.CharField(max_length=120, blank=True)
    responder_email = models.EmailField(blank=True)
    responded_on = models.DateField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    submitted_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_comment = models.TextField(blank=True, max_length=4000)
    expires_at = models.DateTimeField(null=True, blank=True)
    # The score when last submitted or accepted (providers.scoring), for lists and posture.
    score = models.FloatField(null=True, blank=True)
    red_flags = models.JSONField(default=list, blank=True)
    category_scores = models.JSONField(default=dict, blank=True)

    objects = AssessmentQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["provider", "status"], name="assessment_provider_status")]

    def __str__(self) -> str:
        return f"{self.provider.slug} / {self.questionnaire} ({self.status})"

    @property
    def editable(self) -> bool:
        return self.status in (self.Status.DRAFT, self.Status.RETURNED)


class Answer(models.Model):
    """One answer (unique per assessment and question id), the responder's note, an evidence
    link, and the reviewer's comment on it."""

    assessment = models.ForeignKey(Assessment, on_delete=models.CASCADE, related_name="answers")
    question_id = models.CharField(max_length=40)
    value = models.JSONField(null=True, blank=True)
    note = models.TextField(blank=True, max_length=4000)
    evidence_url = models.URLField(blank=True, max_length=500)
    review_comment = models.TextField(blank=True, max_length=2000)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["question_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["assessment", "question_id"], name="answer_unique_per_question"
            )
        ]

    def __str__(self) -> str:
        return f"{self.question_id}={self.value!r}"


class EvidenceFile(models.Model):
    """A file the provider gave as evidence for an answer, stored outside the web root and
    served only to users who may see the provider."""

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="files")
    file = models.FileField(upload_to="evidence/%Y/%m/", max_length=300)
    original_name = models.CharField(max_length=200)
    content_type = models.CharField(max_length=100)
    size = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    uploaded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["uploaded_at", "id"]

    def __str__(self) -> str:
        return self.original_name
