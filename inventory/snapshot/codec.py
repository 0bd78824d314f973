"""Snapshot dataclasses to JSON and back, fast (and the GC pause for building many)."""

from __future__ import annotations

import functools
import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import MISSING, fields, is_dataclass
from typing import Any

from inventory.snapshot.nodes import (
    Node,
    SharedResource,
    SharingConfig,
    SharingEntry,
    Taint,
    UnreadableConfig,
)
from inventory.snapshot.objects import PolicyRule, Role, RoleBinding, Subject, Workload
from inventory.snapshot.pod_scope import PodScope
from inventory.snapshot.pods import Container, EnvVar, Pod, Volume, VolumeMount
from inventory.snapshot_admission import AdmissionPolicy, AdmissionScope
from inventory.snapshot_dra import (
    DraClaim,
    DraClaimTemplate,
    DraConfig,
    DraDevice,
    DraDeviceClass,
    DraRequest,
    DraResult,
    DraSlice,
    PodClaim,
)

# --- JSON round trip -------------------------------------------------------------------------
# Sync converts every pod of a cluster (tens of thousands) on each run and the checks rebuild
# them all from the database, so these are written for speed: no dataclasses.asdict (it
# deep-copies every value) and no generic fields() walk per object.

_NESTED: dict[type, dict[str, type]] = {
    Node: {
        "taints": Taint,
        "unreadable_configs": UnreadableConfig,
        "resource_sharing": SharedResource,
    },
    SharingConfig: {"entries": SharingEntry},
    Container: {"env": EnvVar, "volume_mounts": VolumeMount},
    Pod: {"containers": Container, "volumes": Volume, "resource_claims": PodClaim},
    DraClaim: {
        "requests": DraRequest,
        "config": DraConfig,
        "results": DraResult,
        "allocation_config": DraConfig,
    },
    DraClaimTemplate: {"requests": DraRequest, "config": DraConfig},
    DraDeviceClass: {"config": DraConfig},
    DraSlice: {"devices": DraDevice},
    AdmissionPolicy: {"scopes": AdmissionScope},
    Role: {"rules": PolicyRule},
    RoleBinding: {"subjects": Subject},
}
# Fields holding one nested dataclass or None (not a list of them).
_ONE: dict[type, dict[str, type]] = {Workload: {"template": Pod}, Pod: {"quota_scope": PodScope}}
_SCALARS = (str, int, float, bool, type(None))


@functools.cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """The field names of a dataclass type, None for any other type."""
    return tuple(f.name for f in fields(cls)) if is_dataclass(cls) else None


def to_dict(obj: Any) -> dict[str, Any]:
    """A JSON-ready dict of any snapshot dataclass (tuples become lists, so the dict equals
    what a JSON column gives back and unchanged objects compare equal)."""
    return _jsonable(obj)


def _jsonable(value: Any) -> Any:
    if isinstance(value, _SCALARS):
        return value
    names = _field_names(type(value))
    if names is not None:
        return {name: _jsonable(getattr(value, name)) for name in names}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _fields_of(obj: Any) -> dict[str, Any]:
    names = _field_names(type(obj))
    if names is None:
        raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")
    # Named fields rather than vars(obj): a cached property would add keys to __dict__.
    return {name: getattr(obj, name) for name in names}


# The encoder walks the dataclasses itself (default=) and writes tuples as arrays, so the text
# equals json.dumps(to_dict(obj), sort_keys=True) without building the dict first.
_CANONICAL = json.JSONEncoder(sort_keys=True, check_circular=False, default=_fields_of)


def to_json(obj: Any) -> str:
    """to_dict(obj) as canonical JSON text (keys sorted): what sync hashes and stores."""
    return _CANONICAL.encode(obj)


def from_dict(cls: type, data: dict[str, Any]) -> Any:
    """Rebuild a snapshot dataclass from to_dict() output, ignoring unknown keys."""
    return _builder(cls)(data)


@functools.cache
def _builder(cls: type) -> Callable[[dict[str, Any]], Any]:
    nested = {name: _builder(kind) for name, kind in _NESTED.get(cls, {}).items()}
    one = {name: _builder(kind) for name, kind in _ONE.get(cls, {}).items()}
    plan = [
        (f.name, nested.get(f.name), one.get(f.name), f.default, f.default_factory)
        for f in fields(cls)
    ]
    # Our classes have no __post_init__, so filling __dict__ directly makes the same object as
    # __init__ without its per-field object.__setattr__ calls (the classes are frozen).
    direct = not hasattr(cls, "__post_init__") and not hasattr(cls, "__slots__")

    def build(data: dict[str, Any]) -> Any:
        values: dict[str, Any] = {}
        complete = True
        for name, inner, single, default, factory in plan:
            if name in data:
                value = data[name]
                if inner is not None:
                    value = tuple([inner(item) for item in value or ()])
                elif single is not None:
                    value = None if value is None else single(value)
                elif isinstance(value, list):
                    value = tuple([tuple(v) if isinstance(v, list) else v for v in value])
                values[name] = value
            elif default is not MISSING:
                values[name] = default
            elif factory is not MISSING:
                values[name] = factory()
            else:
                complete = False
        if not complete:  # a required field is missing: the dataclass raises its own TypeError
            return cls(**{k: v for k, v in values.items() if k in data})
        if not direct:
            return cls(**values)
        obj = object.__new__(cls)
        obj.__dict__.update(values)
        return obj

    return build


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many acyclic objects (a parsed
    snapshot, its dataclasses, rows): with it running, every 700 allocations trigger a pass
    and whole-heap passes recur as the heap grows, which triples the time of json.loads on a
    large cluster. Only re-enables what it disabled, so nesting and threads are safe."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # What the pause built and still holds goes straight to the oldest generation
            # (freeze, then unfreeze into it): left young, the first collections after the
            # pause walk every one of those millions of objects, twice (2.4 s of a 2,000-node
            # sync). Garbage among them is still collected, by the next full collection.
            gc.freeze()
            gc.unfreeze()
            gc.enable()
