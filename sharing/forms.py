"""Forms for the sharing-request pages."""

from __future__ import annotations

import json

from django import forms
from django.core.validators import MaxValueValidator

from gpuposture.base.labels import words
from tenants.models import SharingRequest, Tenant
from tenants.policy import SHARING_MODES, mode_permitted


class SharingRequestForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), to_field_name="slug")
    cluster = forms.ModelChoiceField(queryset=Tenant.objects.none(), to_field_name="name")
    node_pool = forms.RegexField(
        regex=r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$",
        max_length=63,
        required=False,
        help_text="Empty for the whole cluster.",
    )
    mode = forms.ChoiceField(choices=[(m, words(m)) for m in SHARING_MODES if m != "exclusive"])
    justification = forms.CharField(
        max_length=2000, min_length=10, widget=forms.Textarea(attrs={"rows": 3})
    )

    def __init__(self, *args, user, tenants, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Nobody asks to share on behalf of the system tenant `unclassified`.
        tenants = tenants.filter(is_system=False).select_related("trust_class")
        self.fields["tenant"].queryset = tenants
        cluster_model = SharingRequest._meta.get_field("cluster").related_model
        self.fields["cluster"].queryset = cluster_model.objects.visible_to(user)
        # Offer only the modes the tenant's class allows: all of them once a tenant is chosen
        # (the page's script narrows the list as the tenant changes), else those any of the
        # user's tenants may ask for. clean() holds the line for a hand-made POST.
        self.modes_by_tenant = {t.slug: requestable_modes(t.trust_class) for t in tenants}
        picked = str(self.data.get("tenant") or self.initial.get("tenant") or "")
        chosen = self.modes_by_tenant.get(picked)
        offered = (
            chosen
            if chosen is not None
            else sorted(
                {m for modes in self.modes_by_tenant.values() for m in modes},
                key=SHARING_MODES.index,
            )
        )
        self.fields["mode"].choices = [(m, m) for m in offered]
        if chosen is not None:
            self.fields["mode"].error_messages["invalid_choice"] = self._refusal(
                tenants.get(slug=picked)
            )
        self.fields["tenant"].widget.attrs["data-modes"] = json.dumps(self.modes_by_tenant)
        self.fields[
            "mode"
        ].help_text = "Only the modes the tenant's trust class allows are offered."

    def clean(self) -> dict | None:
        data = super().clean()
        tenant, mode = data.get("tenant"), data.get("mode")
        if tenant and mode and mode not in self.modes_by_tenant.get(tenant.slug, ()):
            self.add_error("mode", self._refusal(tenant) % {"value": mode})
        return data

    def _refusal(self, tenant: Tenant) -> str:
        """The refusal, with %(value)s for the mode asked (Django's invalid_choice format)."""
        allowed = ", ".join(self.modes_by_tenant.get(tenant.slug, ())) or "no sharing mode"
        return (
            f"Tenant {tenant.slug}'s trust class '{tenant.trust_class.slug}' allows only "
            f"{allowed} (not %(value)s); exclusive use needs no request."
        )


def requestable_modes(trust_class) -> list[str]:
    """The sharing modes a tenant of this class may ask for (exclusive needs no request)."""
    return [m for m in SHARING_MODES if m != "exclusive" and mode_permitted(trust_class, m).allowed]


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(
        choices=[("approve", "approve"), ("deny", "deny"), ("revoke", "revoke")]
    )
    reason = forms.CharField(
        max_length=2000, min_length=3, widget=forms.Textarea(attrs={"rows": 2})
    )
    expires_in_days = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=3650,
        help_text="Approve only: a shorter expiry than the trust class's, if you want one.",
    )

    def __init__(
        self, *args, limit_days: int | None = None, class_slug: str = "", **kwargs
    ) -> None:
        super().__init__(*args, **kwargs)
        # The trust class's period is the ceiling (sharing.services._expiry): said
        # beside the field and set as the input's max, before the approver hits it.
        if limit_days:
            field = self.fields["expires_in_days"]
            field.max_value = limit_days
            field.validators.append(MaxValueValidator(limit_days))
            field.widget.attrs["max"] = limit_days
            field.help_text = (
                f"Approve only: 1 to {limit_days} days (trust class {class_slug} approvals "
                f"last at most {limit_days}); empty means {limit_days}."
            )
        else:
            self.fields["expires_in_days"].help_text = (
                "Approve only: 1 to 3650 days, or empty for an approval that does not expire "
                f"(trust class {class_slug} sets no period)."
            )
