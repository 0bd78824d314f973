"""Forms for the provider pages."""

from __future__ import annotations

from typing import Any

from django import forms

from providers.models import Assessment, Provider, ProviderContact
from providers.services import CONTACT_FIELDS

ContactFormSet = forms.inlineformset_factory(
    Provider, ProviderContact, fields=list(CONTACT_FIELDS), extra=2, can_delete=True
)


class ProviderForm(forms.ModelForm):
    website = forms.URLField(required=False, assume_scheme="https", max_length=200)

    class Meta:
        model = Provider
        fields = ["slug", "name", "website", "contact_name", "contact_email", "notes"]
        labels = {"contact_name": "Main contact", "contact_email": "Main contact's email"}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.contacts = ContactFormSet(self.data or None, instance=self.instance, prefix="contacts")

    def is_valid(self) -> bool:
        return super().is_valid() and self.contacts.is_valid()

    def provider_values(self) -> dict[str, Any]:
        """The provider's fields, for providers.services.provider_save (once valid)."""
        return {name: self.cleaned_data[name] for name in self._meta.fields or ()}

    def contact_rows(self) -> list[dict[str, Any]]:
        """The contacts the page leaves (kept, changed or added; not those marked for
        deletion, nor blank extra rows), for provider_save (once valid)."""
        deleted = self.contacts.deleted_forms
        return [
            {name: row.cleaned_data[name] for name in CONTACT_FIELDS}
            for row in self.contacts.forms
            if row.cleaned_data and row not in deleted
        ]


class AttestationForm(forms.ModelForm):
    """Who at the provider answered, and when: the "in writing" of the questionnaire."""

    class Meta:
        model = Assessment
        fields = ["responder_name", "responder_email", "responded_on"]
        labels = {
            "responder_name": "Answered by (name at the provider)",
            "responder_email": "Their email",
            "responded_on": "Answered on",
        }
        # ISO, whatever the locale: a date input reads only YYYY-MM-DD (en-gb would render
        # 30/11/2026, which the browser shows as empty and the next save would clear).
        widgets = {"responded_on": forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")}


class ImportForm(forms.Form):
    file = forms.FileField(label="Answers CSV (the export's format)")
