"""Forms for posture pages. Each states its limits before the user hits them (help text and
the date input's min and max) and checks the same limits the service does, so a refusal is
an error beside the field, with what was typed kept."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import forms
from django.contrib.auth import get_user_model

from posture.acceptance import acceptance_until, acceptance_window
from posture.models import WEB_URL
from posture.services import MAX_ACCEPTANCE_DAYS, AcceptanceError
from posture.triage import BULK_MAX, owner_choices

REASON_MIN, REASON_MAX = 10, 2000


class AcceptForm(forms.Form):
    reason = forms.CharField(
        max_length=REASON_MAX,
        min_length=REASON_MIN,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=f"Why the risk is acceptable for now: {REASON_MIN} to {REASON_MAX} characters.",
    )
    # ISO: what a type="date" input reads (the locale format would leave it empty).
    until = forms.DateField(
        label="Until", widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        first, last = acceptance_window()
        # The day the form was shown is the day its window is checked against.
        self.today = first - timedelta(days=1)
        self.fields["until"].widget.attrs.update(min=first.isoformat(), max=last.isoformat())
        self.fields["until"].help_text = (
            f"A day from {first:%Y-%m-%d} to {last:%Y-%m-%d} (at most {MAX_ACCEPTANCE_DAYS} "
            "days); after it the finding opens again."
        )

    def clean_reason(self) -> str:
        reason = self.cleaned_data["reason"].strip()
        if len(reason) < REASON_MIN:
            raise forms.ValidationError(f"Give a reason of at least {REASON_MIN} characters.")
        return reason

    def clean_until(self) -> datetime:
        # The API's rule too (posture.acceptance): the end of the chosen day, UTC.
        try:
            return acceptance_until(self.cleaned_data["until"], today=self.today)
        except AcceptanceError as exc:
            raise forms.ValidationError(str(exc)) from exc


class BulkAcceptForm(AcceptForm):
    """The same acceptance for the findings ticked on the findings list."""

    ids = forms.TypedMultipleChoiceField(coerce=int, choices=(), required=True)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Any id is a valid choice here; the view looks them up in what the user may see.
        raw = self.data.getlist("ids") if hasattr(self.data, "getlist") else []
        self.fields["ids"].choices = [(v, v) for v in raw if str(v).isdigit()]
        self.fields["ids"].error_messages["required"] = "Tick at least one finding to accept."

    def clean_ids(self) -> list[int]:
        ids = self.cleaned_data["ids"]
        if len(ids) > BULK_MAX:
            raise forms.ValidationError(f"Accept at most {BULK_MAX} findings at once.")
        return ids


class TriageForm(forms.Form):
    ticket_url = forms.URLField(
        label="Ticket link",
        required=False,
        max_length=500,
        assume_scheme="https",
        validators=[WEB_URL],
        help_text="Where the fix is tracked: an http:// or https:// address (optional).",
        widget=forms.URLInput(attrs={"placeholder": "https://tracker.example/PROJ-123"}),
    )
    owner = forms.ModelChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        to_field_name="username",
        empty_label="(nobody)",
        help_text="Who owns the fix (optional).",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["owner"].queryset = owner_choices()
