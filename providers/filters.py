"""Assessment filters (STYLE rule 8): the provider by slug, name or id (DESIGN §8), refused
with a 400 when it names no provider the user may see, never an empty list."""

from __future__ import annotations

from gpuposture.base.filters import FilterSet, NamedFilter
from providers.models import Assessment, Provider


class AssessmentFilter(FilterSet):
    provider = NamedFilter(
        path="provider",
        model=Provider,
        names=("slug", "name"),
        noun="provider",
        listing="GET /api/v1/providers/",
        label="Provider (slug, name or id)",
    )

    class Meta:
        model = Assessment
        fields = ["provider", "status"]
