"""The reset attestation form: what was reset, when, how, and between which tenants."""

from __future__ import annotations

from django import forms
from django.conf import settings

from inventory.models import Cluster
from telemetry.models import ResetAttestation


class ResetAttestationForm(forms.ModelForm):
    class Meta:
        model = ResetAttestation
        fields = [
            "cluster",
            "node",
            "gpu_uuid",
            "reset_at",
            "method",
            "previous_tenant",
            "next_tenant",
            "note",
        ]
        widgets = {"reset_at": forms.DateTimeInput(attrs={"type": "datetime-local"})}

    def clean(self) -> dict | None:
        cleaned = super().clean()
        cluster, node = cleaned.get("cluster"), cleaned.get("node")
        if cluster and node and not cluster.nodes.filter(name=node).exists():
            self.add_error("node", f"{cluster.name} has no node {node!r} in its inventory")
        return cleaned

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["cluster"].queryset = Cluster.objects.order_by("name")
        # A browser's datetime-local carries no zone: the server reads it in its own, which a
        # user elsewhere must know, or the reset lands hours off the handover it attests.
        self.fields[
            "reset_at"
        ].help_text = (
            f"In {settings.TIME_ZONE}, to the minute (a reset at 10:00 stands for 10:00-10:01)."
        )
