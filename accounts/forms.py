"""The form that asks for a new API token."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.validators import MaxValueValidator

from accounts.services import DEFAULT_DAYS, NAME_MAX_LENGTH
from gpuposture.base.models import ApiToken


class TokenCreateForm(forms.Form):
    name = forms.CharField(
        max_length=NAME_MAX_LENGTH, help_text="What uses it, e.g. ci-export or grafana."
    )
    scope = forms.ChoiceField(
        choices=ApiToken.Scope.choices,
        initial=ApiToken.Scope.READ,
        help_text="Read-only unless the tool changes things.",
    )
    days = forms.IntegerField(min_value=1, initial=DEFAULT_DAYS, label="Expires in (days)")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Read per form, not at import: the limit is a setting (GPUPOSTURE_TOKEN_MAX_DAYS).
        limit = settings.GPUPOSTURE_TOKEN_MAX_DAYS
        days = self.fields["days"]
        days.validators.append(MaxValueValidator(limit))
        days.widget.attrs["max"] = limit
        days.help_text = f"At most {limit}."
