"""A pack as files: multi-document YAML, a kustomize directory (zip), and its hash. PURE."""

from __future__ import annotations

import hashlib
import io
import zipfile

import yaml


def pack_yaml(objects: list[dict]) -> str:
    """Multi-document YAML, in the pack's order (parameters before the policies reading them)."""
    return yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False, width=100)


def pack_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def file_name(obj: dict) -> str:
    return f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"


def kustomize_files(objects: list[dict]) -> dict[str, str]:
    """One file per object and the kustomization.yaml listing them in order."""
    files = {file_name(obj): yaml.safe_dump(obj, sort_keys=False, width=100) for obj in objects}
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": list(files),
    }
    return {"kustomization.yaml": yaml.safe_dump(kustomization, sort_keys=False), **files}


def kustomize_zip(objects: list[dict], folder: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in kustomize_files(objects).items():
            archive.writestr(f"{folder}/{name}", text)
    return buffer.getvalue()
