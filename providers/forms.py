"""Forms for the provider pages."""

from __future__ import annotations

from django import forms
from django.db import transaction

from audit.services import model_to_audit_dict
from providers.assessments import provider_record
from providers.models import Assessment, Provider, ProviderContact

ContactFormSet = forms.inlineformset_factory(
    Provider, ProviderContact, fields=["name", "email", "phone", "role"], extra=2, can_delete=True
)


class ProviderForm(forms.ModelForm):
    website = forms.URLField(required=False, assume_scheme="https", max_length=200)

    class Meta:
        model = Provider
        fields = ["slug", "name", "website", "contact_name", "contact_email", "notes"]
        labels = {"contact_name": "Main contact", "contact_email": "Main contact's email"}

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        self.before = model_to_audit_dict(self.instance) if self.instance.pk else None
        self.contacts = ContactFormSet(self.data or None, instance=self.instance, prefix="contacts")

    def is_valid(self) -> bool:
        return super().is_valid() and self.contacts.is_valid()

    @transaction.atomic
    def save(self, commit: bool = True) -> Provider:
        provider = super().save()
        self.contacts.instance = provider
        self.contacts.save()
        provider_record(provider=provider, actor=self.user, before=self.before)
        return provider


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
