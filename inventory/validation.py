"""Rules for how a cluster may be reached, shared by the API serializer and the page form."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError

MAX_PATHS = 20
REACH_FIELDS = ("source", "kubeconfig_path", "kube_context", "snapshot_paths")


def reach_unchanged(stored: object | None, given: dict[str, object]) -> bool:
    """Whether an edit leaves how the cluster is reached as stored. Such an edit (a provider,
    a description) is not checked against the reach rules again: a snapshot cluster fed by
    `manage.py sync_cluster --snapshot` stores no paths (each run gives its own), and a file
    that has gone since must not block linking the cluster to its provider."""
    if stored is None or getattr(stored, "pk", None) is None:
        return False
    return all(given[field] == getattr(stored, field) for field in REACH_FIELDS)


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
            raise ValidationError(
                {
                    "snapshot_paths": f"give 1 to {MAX_PATHS} paths of kubectl JSON files "
                    "for scheduled syncs to re-read"
                }
            )
        paths = [
            _inside(p, settings.GPUPOSTURE_SNAPSHOT_DIR, "snapshot_paths") for p in snapshot_paths
        ]
        return {"kubeconfig_path": "", "kube_context": "", "snapshot_paths": paths}
    if snapshot_paths:
        raise ValidationError({"snapshot_paths": "only for the snapshot source"})
    return {"kubeconfig_path": "", "kube_context": "", "snapshot_paths": []}
