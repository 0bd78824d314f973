"""JSON shapes of findings and scores (DESIGN §8), shared by the API and the exports."""

from __future__ import annotations

from typing import cast

from django.db import models
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from inventory.presenter import PresentedSerializer
from posture.finding_fields import (
    API_FIELDS,
    check_mappings,
    check_remediation,
    finding_points,
    remediation_shown,
)
from posture.models import EarlierAcceptance, Finding, TenantScore
from posture.selectors import NOT_SCORED_REASONS, finding_not_rejudged, not_scored_reason


# A finding's JSON: posture.finding_fields lists its keys, in order. A model field of the same
# name is read as the model declares it; the fields declared here are read through a relation
# or derived from the check, and say their schema type. (No docstring: the schema describes
# the component with PresentedSerializer's.)
class FindingSerializer(PresentedSerializer):
    check = serializers.CharField(source="check_id")
    tenants = serializers.SerializerMethodField()
    risk = serializers.FloatField(
        source="exposure",
        read_only=True,
        help_text="Risk points this finding adds to the tenants it affects (those you may "
        "see), as the score counts them, each tenant with its own exposure (what the cause "
        "spans of that tenant's, e.g. its own namespaces a binding reaches): the sum of the "
        "finding's contributions to those tenants' scores; 0 unless open. An acceptance past "
        "its expiry reads open here at once; the tenants' scores count it from their next "
        "re-score.",
    )
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)
    mappings = serializers.SerializerMethodField()
    remediation = serializers.SerializerMethodField()
    owner = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="Who owns the fix (a username; null: nobody). Set on the finding's page.",
    )

    class Meta:
        model = Finding
        fields = API_FIELDS

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_tenants(self, finding: Finding) -> list[str]:
        """Slugs of the tenants it affects (the presenter leaves out, for a tenant viewer, the
        ones they may not see)."""
        return sorted(t.slug for t in finding.tenants.all())

    def to_representation(self, instance: models.Model) -> dict:
        # After the presenter: a tenant viewer's risk is what it adds to their own tenants.
        finding = cast(Finding, instance)  # this serializer's model
        data = super().to_representation(finding)
        data["status"] = finding.effective_status  # a lapsed acceptance reads open
        data["remediation"] = remediation_shown(data)
        weights = {t.slug: t.trust_class.risk_weight for t in finding.tenants.all()}
        own = finding_own_exposures(finding)
        data["risk"] = finding_points(
            status=data["status"],
            severity=finding.severity,
            tenants=[
                (weights.get(slug, 1.0), own.get(slug, finding.exposure))
                for slug in data["tenants"]
            ],
        )
        return data

    def get_mappings(self, finding: Finding) -> list[str]:
        return check_mappings(finding.check_id)

    def get_remediation(self, finding: Finding) -> str:
        return check_remediation(finding.check_id)


def finding_own_exposures(finding: Finding) -> dict[str, int]:
    """slug -> the tenant's own exposure, for the finding's links that have one
    (FindingTenant.exposure; the others take the finding's). From the prefetched
    `tenant_links` where the view read them (FindingViewSet, the tenant's posture), else one
    query."""
    slugs = {t.pk: t.slug for t in finding.tenants.all()}
    return {
        slugs[link.tenant_id]: link.exposure
        for link in finding.tenant_links.all()
        if link.exposure is not None and link.tenant_id in slugs
    }


class EarlierAcceptanceSerializer(PresentedSerializer):
    """A risk accepted on a narrower finding this one spans (its subject widened):
    `carried` when the finding is accepted because every subject it spans was, else it no
    longer applies; `covers` of `of`: how many of its subjects these acceptances covered.
    Or its own acceptance, which lapsed when it resolved and came back (`source` is itself)."""

    source = serializers.PrimaryKeyRelatedField(
        read_only=True,
        allow_null=True,
        help_text="The narrower finding it was made on; the finding itself for its own "
        "acceptance, which lapsed when it resolved and came back.",
    )
    accepted_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = EarlierAcceptance
        fields = ["source", "subject", "accepted_by", "reason", "until", "carried", "covers", "of"]


class FindingDetailSerializer(FindingSerializer):
    """One finding, with the acceptances made on the narrower findings it spans."""

    earlier_acceptances = EarlierAcceptanceSerializer(many=True, read_only=True)
    # Why the last sync kept it as it was (a kind its check needs was not read); "" if judged.
    not_rejudged = serializers.SerializerMethodField()
    reopened = serializers.CharField(
        source="reopened_note",
        read_only=True,
        help_text="Why an acceptance still within its expiry no longer holds: the finding "
        'lists a change detected after it ("reopened: a change after the acceptance (detected '
        '…)"), or bulletin exposure beyond what was accepted: a new CVE, a higher fix, a '
        'higher severity ("reopened: more exposure than was accepted (new CVE-…; driver fix '
        '… -> …; severity high -> critical)"); "" otherwise.',
    )

    class Meta(FindingSerializer.Meta):
        fields = [*API_FIELDS, "reopened", "earlier_acceptances", "not_rejudged"]

    def get_not_rejudged(self, finding: Finding) -> str:
        return finding_not_rejudged(finding)


class ScoreField(serializers.FloatField):
    """A score as shown: a whole number from 10 up, a decimal below (never 0 with finite risk)."""

    def to_representation(self, value: float) -> float | int:  # type: ignore[override]  # a number, not a str
        number = float(value)
        return int(number) if number.is_integer() else number


NOT_SCORED_HELP = (
    "Why `risk`, `score` and `grade` are null (null when scored): `no_successful_sync` (no "
    "cluster has been synced successfully yet, so nothing was read to score) or "
    "`not_scored_yet` (declared since the last score run)."
)
OBSERVED_HELP = (
    "True when some namespace of the tenant was seen by a successful sync of some cluster, "
    "or an open or accepted finding affects it. False: nothing of it was seen on any cluster "
    "read, so a score of 100 says nothing was read about it, not that it is clean."
)


@extend_schema_field(
    {"type": "string", "enum": list(NOT_SCORED_REASONS), "nullable": True, "readOnly": True}
)
class NotScoredReasonField(serializers.Field):
    """Why a tenant has no score, from its latest risk (`risk_attr`, None when unscored). The
    reason is read once per response, and only when a row is unscored (the list's query
    count does not move for a scored world)."""

    def __init__(self, *, risk_attr: str, **kwargs) -> None:
        self.risk_attr = risk_attr
        super().__init__(source="*", read_only=True, help_text=NOT_SCORED_HELP, **kwargs)

    def to_representation(self, value: object) -> str | None:
        if getattr(value, self.risk_attr, None) is not None:
            return None
        context = self.context  # the list's, shared by its rows
        if "not_scored_reason" not in context:
            context["not_scored_reason"] = not_scored_reason()
        return context["not_scored_reason"]


class ContributionSerializer(serializers.Serializer):
    finding_id = serializers.IntegerField()
    check = serializers.CharField()
    severity = serializers.CharField()
    exposure = serializers.IntegerField(default=1)
    points = serializers.FloatField(help_text="Risk points this open finding adds.")
    share = serializers.FloatField(default=0, help_text="Percent of the tenant's risk.")
    reason = serializers.CharField()


class TenantScoreSerializer(serializers.ModelSerializer):
    score = ScoreField()
    contributions = ContributionSerializer(many=True)

    class Meta:
        model = TenantScore
        fields = [
            "risk",
            "score",
            "grade",
            "cap",
            "computed_at",
            "open_by_severity",
            "contributions",
        ]


class PostureSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    trust_class = serializers.CharField()
    risk = serializers.FloatField(allow_null=True, help_text="Risk points: what ranks tenants.")
    score = ScoreField(allow_null=True, help_text="100 x exp(-risk / K).")
    grade = serializers.CharField(allow_null=True)
    cap = serializers.CharField(allow_blank=True)
    computed_at = serializers.DateTimeField(allow_null=True)
    scored = serializers.BooleanField(help_text="False until a score run has scored the tenant.")
    not_scored_reason = serializers.ChoiceField(
        choices=list(NOT_SCORED_REASONS), allow_null=True, help_text=NOT_SCORED_HELP
    )
    observed = serializers.BooleanField(help_text=OBSERVED_HELP)
    contributions = ContributionSerializer(many=True)
    findings = FindingSerializer(many=True)
