"""The cluster form: the same reach rules as the API (inventory.validation)."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from inventory.bulletins.store import MAX_DOCUMENT_BYTES
from inventory.models import Cluster
from inventory.validation import clean_cluster_source, reach_unchanged


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
            "name",
            "description",
            "provider",
            "source",
            "kubeconfig_path",
            "kube_context",
            "sync_interval_minutes",
        ]
        help_texts = {
            "kubeconfig_path": "A file inside GPUPOSTURE_KUBECONFIG_DIR on the workers.",
            "kube_context": "Empty for the kubeconfig's current context.",
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["name"].disabled = True
            self.initial["snapshot_paths_text"] = "\n".join(self.instance.snapshot_paths)

    def clean(self) -> dict | None:
        data = super().clean()
        paths = [p.strip() for p in data.get("snapshot_paths_text", "").splitlines() if p.strip()]
        given = {
            "source": data.get("source", ""),
            "kubeconfig_path": data.get("kubeconfig_path", ""),
            "kube_context": data.get("kube_context", ""),
            "snapshot_paths": paths,
        }
        # The instance still holds what is stored here (the form's values go in after clean).
        if reach_unchanged(self.instance, given):
            return data
        try:
            reach = clean_cluster_source(**given)
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


class PatchSlaForm(forms.Form):
    """Days allowed per severity; the initial values are the SLA in force."""

    def __init__(self, *args, rows: list[dict], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for row in rows:
            self.fields[row["severity"]] = forms.IntegerField(
                label=f"{row['severity'].capitalize()} (days)",
                min_value=1,
                max_value=3650,
                initial=row["days"],
                help_text=f"default {row['default_days']}",
            )


class _MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class _MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("widget", _MultipleFileInput(attrs={"accept": ".json,application/json"}))
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        if isinstance(data, list | tuple):
            return [super(_MultipleFileField, self).clean(d, initial) for d in data]
        return [super().clean(data, initial)] if data else []


MAX_UPLOAD_FILES = 50


class BulletinImportForm(forms.Form):
    """CSAF documents to import: uploaded files, or URLs of documents or provider feeds."""

    files = _MultipleFileField(required=False, label="CSAF JSON files")
    urls = forms.CharField(
        required=False,
        max_length=4000,
        label="Or URLs (one per line): documents or a provider-metadata.json feed",
        widget=forms.Textarea(attrs={"rows": 3}),
    )

    def clean_files(self) -> list:
        files = self.cleaned_data.get("files") or []
        if len(files) > MAX_UPLOAD_FILES:
            raise ValidationError(f"at most {MAX_UPLOAD_FILES} files at once")
        for upload in files:
            if upload.size > MAX_DOCUMENT_BYTES:
                raise ValidationError(
                    f"{upload.name}: larger than {MAX_DOCUMENT_BYTES // 1024 // 1024} MB"
                )
        return files

    def clean_urls(self) -> list[str]:
        urls = [line.strip() for line in self.cleaned_data.get("urls", "").splitlines()]
        urls = [u for u in urls if u]
        if len(urls) > 20:
            raise ValidationError("at most 20 URLs at once")
        for url in urls:
            if not url.lower().startswith(("https://", "http://")):
                raise ValidationError(f"{url[:100]}: not an http(s) URL")
        return urls

    def clean(self) -> dict | None:
        cleaned = super().clean()
        if not self.errors and not cleaned.get("files") and not cleaned.get("urls"):
            raise ValidationError("choose at least one file or give a URL")
        return cleaned
