"""Forms for posture pages."""

from __future__ import annotations

from datetime import datetime, time

from django import forms
from django.utils import timezone


class AcceptForm(forms.Form):
    reason = forms.CharField(
        max_length=2000, min_length=10, widget=forms.Textarea(attrs={"rows": 2})
    )
    until = forms.DateField(widget=forms.DateInput(attrs={"type": "date"}))

    def clean_until(self) -> datetime:
        # The acceptance lasts to the end of the chosen day (UTC).
        return timezone.make_aware(datetime.combine(self.cleaned_data["until"], time(23, 59, 59)))
