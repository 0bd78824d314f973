"""Forms for the sharing-request pages."""

from __future__ import annotations

import json

from django import forms
from django.core.validators import MaxValueValidator

from tenants.models import SharingRequest, Tenant
from tenants.policy import SHARING_MODES, WITHIN_TENANT, request_scope


class SharingRequestForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), to_field_name="slug")
    cluster = forms.ModelChoiceField(queryset=Tenant.objects.none(), to_field_name="name")
    node_pool = forms.RegexField(
        regex=r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$",
        max_length=63,
        required=False,
        help_text="Empty for the whole cluster.",
    )
    # Every known mode may be asked for (DESIGN §3: within one tenant any mode is allowed); one
    # the tenant's class forbids between tenants is approved for its own pods only.
    mode = forms.ChoiceField(choices=[(m, m) for m in SHARING_MODES if m != "exclusive"])
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
        # The page's script says the scope as the tenant and mode change: tenant -> class,
        # class -> {mode: the note}, so the page grows with the classes, not tenants x modes.
        self.class_of = {t.slug: t.trust_class.slug for t in tenants}
        self.notes = {t.trust_class.slug: own_use_notes(t.trust_class) for t in tenants}
        attrs = self.fields["tenant"].widget.attrs
        attrs["data-classes"] = json.dumps(self.class_of)
        attrs["data-scope-notes"] = json.dumps(self.notes)
        self.fields["mode"].help_text = (
            "A mode the tenant's trust class forbids between tenants is approved for the "
            "tenant's own pods only; exclusive use needs no request."
        )

    def scope_note(self) -> str:
        """The scope's caveat for the tenant and mode picked (none picked: "")."""
        tenant = str(self.data.get("tenant") or self.initial.get("tenant") or "")
        mode = str(self.data.get("mode") or self.initial.get("mode") or "")
        return self.notes.get(self.class_of.get(tenant, ""), {}).get(mode, "")


def own_use_notes(trust_class) -> dict[str, str]:
    """{mode: the policy's words} for the modes a tenant of this class may ask for its own pods
    only (the class forbids them between tenants)."""
    notes = {}
    for mode in SHARING_MODES:
        decision = request_scope(trust_class, mode)
        if decision.scope == WITHIN_TENANT:
            notes[mode] = decision.rule
    return notes


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
