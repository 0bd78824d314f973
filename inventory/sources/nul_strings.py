"""A NUL (U+0000) in a string a cluster source read, removed before anything is stored or
judged, and counted for the run to say. PURE: no Django, no client library.

PostgreSQL stores no NUL in text or jsonb: one would fail the sync at write time in the
database's words. The API server refuses one in names, namespaces and label keys and values,
but accepts it in annotation values, ConfigMap data, env values, container args and command,
and a custom resource's spec strings: a tenant who may create a pod in their own namespace
could otherwise hold back every sync of the cluster, and with it the posture of every other
tenant. An object's own metadata.name, metadata.namespace and metadata.labels are left as
read: the API server refuses a NUL in them, and normalise refuses one naming the object
(object_names, snapshot_items), as the API server would. Both the snapshot files
(snapshot_file) and the live read (kube) use this.

Removed, not replaced by a marker (U+FFFD): the checks then read the value as its author wrote
it around the NUL, so one byte cannot make a literal credential, an image reference or a
version stop matching what the checks look for (a tenant hiding POD-008 with a trailing NUL).
The run's warning counts every string and names the first places, so nothing is changed
unsaid; a place is the object (object_refs: `namespace/name`, hidden whole from a viewer it
is not theirs) and Kubernetes' own field names, never a map's key (MAP_FIELDS). In a `name`
field (an env variable's, a container's) it is replaced by U+FFFD instead: a removal could
make one name read as another the API server would never have held (NVIDIA_VISIBLE<NUL>_DEVICES).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from inventory.sources.nul_places import Path, place
from inventory.sources.object_refs import object_ref, shown

NUL = "\x00"
REPLACEMENT = ""  # removed (see the module docstring)
MARK = "\ufffd"  # in a `name` field instead: it must not read as another name
WARNING_MARK = "held a NUL byte (\\u0000)"  # in the run's warning (sync_summary finds it)
MAX_PLACES = 5  # places named on the run; the count covers all
LEFT_AS_READ = ("name", "namespace", "labels")  # an object's own metadata normalise refuses


@dataclass
class NulReplaced:
    """The strings (keys or values) that held a NUL, over one read: how many, and where the
    first MAX_PLACES places were ("Pod team-a/p spec.containers[0].args[1]",
    "Pod team-a/p metadata.annotations (2 keys)"); values and map keys never shown."""

    count: int = 0
    # (object and path, what: "" for the string at the path, "value" for a string under a
    # key not shown, "key" for a key's own name) -> strings there
    found: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, place: str, what: str = "") -> None:
        self.count += 1
        key = (place, what)
        if key in self.found or len(self.found) < MAX_PLACES:
            self.found[key] = self.found.get(key, 0) + 1

    def extend(self, other: NulReplaced) -> None:
        for key, n in other.found.items():
            if key in self.found or len(self.found) < MAX_PLACES:
                self.found[key] = self.found.get(key, 0) + n
        self.count += other.count

    @property
    def places(self) -> list[str]:
        return [place(where, what, n) for (where, what), n in self.found.items()]

    def warning(self) -> str | None:
        """The run's warning, or None when no string held one."""
        if not self.count:
            return None
        strings = "1 string" if self.count == 1 else f"{self.count:,} strings"
        unnamed = self.count - sum(self.found.values())
        more = f" and {unnamed:,} more" if unnamed else ""
        return (
            f"{strings} read {WARNING_MARK}, which the database cannot store and the "
            f"Kubernetes API accepts in annotations, ConfigMap data, env values and args: each "
            f"was read with the NUL removed, or in a name marked U+FFFD "
            f"({'; '.join(self.places)}{more})"
        )


def may_hold_nul(data: bytes | str) -> bool:
    """Whether JSON text may hold a NUL in a string (its escape, or a raw zero byte as UTF-16
    has): a cheap look at the bytes, so only such a document is walked."""
    if isinstance(data, str):
        return "\\u0000" in data or NUL in data
    return b"\\u0000" in data or b"\x00" in data


def nul_replace(objects: Iterable[Any], found: NulReplaced) -> None:
    """Replace every NUL in the keys and string values of `objects` (Kubernetes objects, in
    place) removed, each string counted in `found`; an object's own name and namespace are
    left for normalise to refuse."""
    for obj in objects:
        if isinstance(obj, dict):
            _replace_object(obj, found)


def _replace_object(obj: dict[str, Any], found: NulReplaced) -> None:
    metadata = obj.get("metadata")
    who = _who(obj, metadata)
    identity = {}
    if isinstance(metadata, dict):
        # Set aside, so the walk leaves them as read (normalise refuses a NUL in them: the
        # API server validates names and labels, so one holding a NUL is a hand-edited file,
        # and a label such as gpuposture.io/platform must not read as "true" by a removal).
        identity = {k: metadata[k] for k in LEFT_AS_READ if k in metadata}
        for key in identity:
            metadata[key] = ""
    try:
        _walk_dict(obj, Path(who), found)
    finally:
        if isinstance(metadata, dict):
            metadata.update(identity)


def _who(obj: dict[str, Any], metadata: Any) -> str:
    meta = metadata if isinstance(metadata, dict) else {}
    name, namespace = meta.get("name"), meta.get("namespace")
    kind = obj.get("kind")
    return object_ref(
        shown(kind) if isinstance(kind, str) else "(no kind)",
        namespace if isinstance(namespace, str) else None,
        name if isinstance(name, str) else shown(name),
    )


def _walk(value: Any, path: Path, found: NulReplaced) -> Any:
    """`value` with its NULs replaced (a string anew; a container changed in place)."""
    if isinstance(value, str):
        if NUL in value:
            path.add(found)
            return value.replace(NUL, REPLACEMENT)
        return value
    if isinstance(value, dict):
        _walk_dict(value, path, found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str | dict | list):
                replaced = _walk(item, path.index(index), found)
                if replaced is not item:
                    value[index] = replaced
    return value


def _walk_dict(value: dict[Any, Any], path: Path, found: NulReplaced) -> None:
    renamed = False
    for key, item in value.items():
        if isinstance(key, str) and NUL in key:
            renamed = True
            path.add(found, "key")  # the key is never shown: it is no field name
        inner = path.key(key, item)
        if key == "name" and isinstance(item, str) and NUL in item:
            # A name (an env variable's, a container's, a port's: the API server validates
            # them) must not become another by the removal (NVIDIA_VISIBLE<NUL>_DEVICES):
            # marked, it names nothing the cluster could hold.
            inner.add(found)
            value[key] = item.replace(NUL, MARK)
        elif isinstance(item, str | dict | list):
            replaced = _walk(item, inner, found)
            if replaced is not item:
                value[key] = replaced  # an existing key: the dict's size is unchanged
    if renamed:
        # Rebuilt in its order; a key that reads the same as another once replaced keeps the
        # first value (as a duplicate key in JSON does).
        items = list(value.items())
        value.clear()
        for key, item in items:
            new = key.replace(NUL, REPLACEMENT) if isinstance(key, str) else key
            value.setdefault(new, item)
