"""What changed in a GPU-stack controller's pod template, for DRIFT-002. PURE.

An image bump shows in the images, but an added argument (`--pass-device-specs=true`), a new
env var, a privileged flag or a new hostPath changes the isolation boundary just as much, and
a hash alone does not tell a reviewer which. Each side of the change names, per container, the
fields that differ, and the pod's volumes where they differ.

Env values are never shown: a controller's env may hold a token, and the inventory seals
literal values it does not read (inventory/env_seal.py). The names that were added, removed or
given another value are shown instead.
"""

from __future__ import annotations

from typing import Any

from inventory import snapshot as snap
from inventory.snapshot.codec import to_dict

Fields = dict[str, Any]


def workload_view(workload: snap.Workload | None) -> dict[str, Any]:
    if workload is None:
        return {"present": False}
    # A short hash is enough to tell two pod specs apart on a page.
    return {"images": dict(workload.images), "spec_sha256": workload.spec_hash[:12]}


def template_changes(
    was: snap.Workload, now: snap.Workload
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The differing parts of two pod templates: before, after (each `containers`: name ->
    the fields that differ; `volumes` where they differ) and what changed, in words
    ("nvidia-device-plugin args"). Empty where either side has no template (a workload
    stored before templates were kept)."""
    if was.template is None or now.template is None:
        return {}, {}, []
    old = {c.name: c for c in was.template.containers}
    new = {c.name: c for c in now.template.containers}
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    said: list[str] = []
    for name in sorted(old.keys() | new.keys()):
        a, b = old.get(name), new.get(name)
        if a is None or b is None:
            before[name] = _container(a) if a else None
            after[name] = _container(b) if b else None
            said.append(f"container {name} {'added' if b else 'removed'}")
            continue
        one, other = _container(a), _container(b)
        fields = sorted(k for k in one if one[k] != other[k])
        before[name] = {k: one[k] for k in fields}
        after[name] = {k: other[k] for k in fields}
        if changed_env := _env_changed(a, b):
            before[name]["env"], after[name]["env"] = _env_sides(a, b, changed_env)
            fields.append("env")
        if not fields:
            del before[name], after[name]
            continue
        said.append(f"{name} {', '.join(fields)}")
    parts_before: dict[str, Any] = {"containers": before} if before else {}
    parts_after: dict[str, Any] = {"containers": after} if after else {}
    old_volumes, new_volumes = _volumes(was.template), _volumes(now.template)
    if old_volumes != new_volumes:
        parts_before["volumes"], parts_after["volumes"] = old_volumes, new_volumes
        said.append("volumes")
    return parts_before, parts_after, said


def _container(container: snap.Container) -> Fields:
    """A container's reviewable fields (env apart: _env_sides)."""
    return {
        "image": container.image,
        "command": list(container.command),
        "args": list(container.args),
        "security_context": {
            "privileged": container.privileged,
            "allow_privilege_escalation": container.allow_privilege_escalation,
            "run_as_non_root": container.run_as_non_root,
            "capabilities_add": list(container.capabilities_add),
            "capabilities_drop": list(container.capabilities_drop),
            "host_process": container.host_process,
        },
        "volume_mounts": [
            {"name": m.name, "mount_path": m.mount_path, "read_only": m.read_only}
            for m in container.volume_mounts
        ],
        "resources": {
            "requests": {**container.gpu_requests, **container.accelerator_requests},
            "limits": {**container.gpu_limits, **container.accelerator_limits},
        },
        "env_from": list(container.env_from),
    }


def _env(container: snap.Container) -> dict[str, dict[str, Any]]:
    # Compared whole (value, its reference, a sealed value's length), shown by name only.
    return {e.name: to_dict(e) for e in container.env}


def _env_changed(a: snap.Container, b: snap.Container) -> list[str]:
    old, new = _env(a), _env(b)
    return sorted(n for n in old.keys() | new.keys() if old.get(n) != new.get(n))


def _env_sides(a: snap.Container, b: snap.Container, changed: list[str]) -> tuple[Fields, Fields]:
    """Each side's env names, and the names that differ (added, removed or another value):
    never a value."""
    old, new = _env(a), _env(b)
    return (
        {"names": sorted(old), "changed": [n for n in changed if n in old]},
        {"names": sorted(new), "changed": [n for n in changed if n in new]},
    )


def _volumes(template: snap.Pod) -> list[Fields]:
    return [
        {
            "name": v.name,
            "kind": v.kind,
            "host_path": v.host_path,
            "config_map": v.config_map,
            "claim": v.claim,
        }
        for v in sorted(template.volumes, key=lambda v: v.name)
    ]
