"""Rules for how a cluster may be reached, shared by the API serializer and the page form."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError

MAX_PATHS = 20


def _inside(path_text: str, root: Path, what: str) -> str:
    if not path_text or len(path_text) > 500 or "\x00" in path_text:
        raise ValidationError(f"{what}: give a path of at most 500 characters")
    path = Path(path_text)
    if not path.is_absolute():
        path = root / path
    resolved = path.resolve()
    # Paths only, inside the directory the administrator set aside: a form field must not
    # make the worker read an arbitrary file of the host.
    if not resolved.is_relative_to(root.resolve()):
        raise ValidationError(f"{what}: must be inside {root} (GPUPOSTURE_*_DIR setting)")
    if not resolved.exists():
        raise ValidationError(f"{what}: {resolved} does not exist")
    return str(resolved)


def clean_cluster_source(
    *, source: str, kubeconfig_path: str, kube_context: str, snapshot_paths: list[str]
) -> dict[str, object]:
    """The normalised reach settings for a source, or ValidationError with a message per field."""
    if source == "kubeconfig":
        if snapshot_paths:
            raise ValidationError({"snapshot_paths": "only for the snapshot source"})
        path = _inside(kubeconfig_path, settings.GPUPOSTURE_KUBECONFIG_DIR, "kubeconfig_path")
        return {"kubeconfig_path": path, "kube_context": kube_context, "snapshot_paths": []}
    if kubeconfig_path or kube_context:
        raise ValidationError({"kubeconfig_path": "only for the kubeconfig source"})
    if source == "snapshot":
        if not snapshot_paths or len(snapshot_paths) > MAX_PATHS:
            raise ValidationError({"snapshot_paths": f"give 1 to {MAX_PATHS} paths"})
        paths = [
            _inside(p, settings.GPUPOSTURE_SNAPSHOT_DIR, "snapshot_paths") for p in snapshot_paths
        ]
        return {"kubeconfig_path": "", "kube_context": "", "snapshot_paths": paths}
    if snapshot_paths:
        raise ValidationError({"snapshot_paths": "only for the snapshot source"})
    return {"kubeconfig_path": "", "kube_context": "", "snapshot_paths": []}
