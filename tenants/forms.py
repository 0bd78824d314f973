"""Forms for the sharing-request pages."""

from __future__ import annotations

from django import forms
from django.core.validators import MaxValueValidator

from tenants.models import SharingRequest, Tenant
from tenants.policy import SHARING_MODES


class SharingRequestForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), to_field_name="slug")
    cluster = forms.ModelChoiceField(queryset=Tenant.objects.none(), to_field_name="name")
    node_pool = forms.RegexField(
        regex=r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$",
        max_length=63,
        required=False,
        help_text="Empty for the whole cluster.",
    )
    mode = forms.ChoiceField(choices=[(m, m) for m in SHARING_MODES if m != "exclusive"])
    justification = forms.CharField(
        max_length=2000, min_length=10, widget=forms.Textarea(attrs={"rows": 3})
    )

    def __init__(self, *args, user, tenants, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        # Nobody asks to share on behalf of the system tenant `unclassified`.
        self.fields["tenant"].queryset = tenants.filter(is_system=False)
        cluster_model = SharingRequest._meta.get_field("cluster").related_model
        self.fields["cluster"].queryset = cluster_model.objects.visible_to(user)


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
    ) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        # The trust class's period is the ceiling (tenants.sharing_services._expiry): said
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
