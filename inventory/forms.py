"""The cluster form: the same reach rules as the API (inventory.validation)."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from inventory.models import Cluster
from inventory.validation import clean_cluster_source


class ClusterForm(forms.ModelForm):
    snapshot_paths_text = forms.CharField(
        label="Snapshot paths (one per line)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        max_length=5000,
    )

    class Meta:
        model = Cluster
        fields = [
            "name", "description", "provider", "source", "kubeconfig_path", "kube_context",
            "sync_interval_minutes",
        ]  # fmt: skip
        help_texts = {
            "kubeconfig_path": "A file inside GPUPOSTURE_KUBECONFIG_DIR on the workers.",
            "kube_context": "Empty for the kubeconfig's current context.",
        }

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["name"].disabled = True
            self.initial["snapshot_paths_text"] = "\n".join(self.instance.snapshot_paths)

    def clean(self) -> dict:
        data = super().clean()
        paths = [p.strip() for p in data.get("snapshot_paths_text", "").splitlines() if p.strip()]
        try:
            reach = clean_cluster_source(
                source=data.get("source", ""),
                kubeconfig_path=data.get("kubeconfig_path", ""),
                kube_context=data.get("kube_context", ""),
                snapshot_paths=paths,
            )
        except ValidationError as exc:
            if hasattr(exc, "error_dict"):
                for field, errors in exc.error_dict.items():
                    target = "snapshot_paths_text" if field == "snapshot_paths" else field
                    self.add_error(target, errors)
            else:
                self.add_error(None, exc)
            return data
        data.update(reach)
        self.instance.snapshot_paths = reach["snapshot_paths"]
        return data
