"""Read a cluster snapshot from files: `kubectl get ... -A -o json` output, YAML manifests,
or `kubectl cluster-info dump` (its directory, or its stdout with the container logs skipped).

Each path is a file or a directory, read with its folders at any depth (`kubectl cluster-info
dump --output-directory` writes one per namespace) for its `*.json` / `*.yaml` / `*.yml` files:
other files (the dump's `logs.txt`) and hidden files and folders are left alone. Lists are
flattened, however deeply nested, into the plain objects normalise() expects.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from gpuposture.base.safe_parse import SafeParseError, load_json_values, load_yaml_all
from inventory.snapshot import ClusterSnapshot, gc_paused
from inventory.sources.dump_logs import LogBlocks
from inventory.sources.normalise import SnapshotError, normalise
from inventory.sources.nul_strings import NulReplaced, may_hold_nul, nul_replace

MAX_FILE_BYTES = 200 * 1024 * 1024
# YAML is checked before it is built (gpuposture.base.safe_parse): kubectl's output nests about
# 10 levels (managedFields about 20) and never uses aliases, which let a small file stand for a
# huge one. JSON is not scanned (a snapshot is hundreds of MB and json's C decoder refuses
# absurd nesting itself, cleanly).
MAX_YAML_DEPTH = 100
SNAPSHOT_SUFFIXES = (".json", ".yaml", ".yml")


def read_snapshot(paths: Sequence[str | Path], **platform: Any) -> ClusterSnapshot:
    """The ClusterSnapshot of every object in the given files and directories (`platform`:
    normalise()'s namespace inputs)."""
    return normalise(load_snapshot_objects(paths), **platform)


def load_snapshot_objects(
    paths: Sequence[str | Path], nul: NulReplaced | None = None, read: list[Path] | None = None
) -> list[dict[str, Any]]:
    """Every Kubernetes object in the given files and directories, Lists flattened; each file
    read is appended to `read`. A NUL in any string but an object's name and namespace is
    removed, counted in `nul` (inventory.sources.nul_strings): the database cannot store one,
    and the API server accepts one in an annotation or a ConfigMap's data."""
    if isinstance(paths, str | Path):
        paths = [paths]  # one path given bare would otherwise be read letter by letter
    nul = nul if nul is not None else NulReplaced()
    found: list[dict[str, Any]] = []
    # A parsed snapshot is millions of dicts and lists without a cycle among them: the cyclic
    # collector only slows the parse down (threefold on a large cluster).
    with gc_paused():
        for file in _snapshot_files(paths):
            documents, holds_nul = _documents(file)
            if read is not None:
                read.append(file)
            for document in documents:
                try:
                    objects = _flatten(file, document)
                except RecursionError as exc:  # Lists nested in Lists hundreds deep
                    raise SnapshotError(f"{file}: Lists nested too deeply to read") from exc
                if holds_nul:
                    nul_replace(objects, nul)
                found.extend(objects)
    return found


def _snapshot_files(paths: Sequence[str | Path]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = _directory_files(path)
            if not files:
                raise SnapshotError(f"no .json/.yaml files in {path} or its folders")
            yield from files
        elif path.is_file():
            yield path
        else:
            raise SnapshotError(f"{path}: no such file or directory")


def _directory_files(root: Path) -> list[Path]:
    """The snapshot files under `root` at any depth, in the order of their paths (a folder's
    files with its name: `nodes.json`, then `team-a/pods.json`), so every read is the same."""
    found: list[Path] = []
    # A folder that cannot be listed fails the read (os.walk would skip it in silence, and
    # every object in it would read as gone). Symlinked folders are not entered: no loops.
    for folder, folders, names in os.walk(root, onerror=_unlisted):
        folders[:] = [name for name in folders if not name.startswith(".")]
        found += [
            Path(folder, name)
            for name in names
            if not name.startswith(".") and Path(name).suffix.lower() in SNAPSHOT_SUFFIXES
        ]
    files = sorted(found, key=lambda file: file.relative_to(root).parts)
    return [file for file in files if file.is_file()]


def _unlisted(exc: OSError) -> None:
    raise SnapshotError(f"{exc.filename}: cannot be listed: {exc.strerror}") from exc


def _documents(file: Path) -> tuple[list[Any], bool]:
    """The parsed documents of one file: each JSON value in turn (one, or one per `>>` of
    `kubectl get -o json`), one per `---` section for YAML; and whether a string in them may
    hold a NUL byte (JSON's escape or a raw zero byte in the file, as UTF-16 has; YAML has
    several escapes for it and is always looked through)."""
    size = file.stat().st_size
    if size > MAX_FILE_BYTES:
        raise SnapshotError(
            f"{file}: {size // (1024 * 1024)} MB is over the 200 MB limit; "
            "split the snapshot into several files (one kubectl get per kind)"
        )
    try:
        content = file.read_bytes()
    except OSError as exc:
        raise SnapshotError(f"{file}: cannot be read: {exc}") from exc
    try:
        if _is_json(file, content):
            # LogBlocks: `kubectl cluster-info dump`'s stdout prints logs between its Lists.
            values = load_json_values(content, max_bytes=MAX_FILE_BYTES, skip=LogBlocks())
            return values, may_hold_nul(content)
        return load_yaml_all(content, max_bytes=MAX_FILE_BYTES, max_depth=MAX_YAML_DEPTH), True
    except SafeParseError as exc:
        raise SnapshotError(f"{file}: {exc}") from exc


def _is_json(file: Path, content: bytes) -> bool:
    if file.suffix.lower() == ".json":
        return True
    # A file named otherwise (snapshot.txt) is JSON when it reads like JSON (after a byte-order
    # mark, UTF-8 or UTF-16: PowerShell writes one, and UTF-16's zero bytes).
    start = content.lstrip(b"\xef\xbb\xbf\xff\xfe\x00 \t\r\n")[:1]
    return file.suffix.lower() not in (".yaml", ".yml") and start in (b"{", b"[")


def _flatten(file: Path, document: Any) -> list[dict[str, Any]]:
    if not isinstance(document, dict) or not document.get("kind"):
        what = "a mapping without a kind" if isinstance(document, dict) else _describe(document)
        raise SnapshotError(
            f"{file}: holds {what}, not a Kubernetes object or List; "
            "save the output of `kubectl get ... -A -o json`"
        )
    if not _is_list(document):
        return [document]
    return list(_list_items(document, file))


def _describe(document: Any) -> str:
    if isinstance(document, list):
        return "a bare list"
    if document is None:
        return "null"
    return f"a {type(document).__name__} value"


def _is_list(document: dict[str, Any]) -> bool:
    # kind "List" is always a list, even with its items left out; a typed list (PodList) is
    # told from a custom kind that merely ends in "List" by its items.
    kind = str(document.get("kind", ""))
    return kind == "List" or (kind.endswith("List") and "items" in document)


def _list_items(document: dict[str, Any], file: Path) -> Iterator[Any]:
    """Items of a List, nested Lists flattened. A typed list from the API (PodList) leaves
    `kind` off its items; it is put back so normalise can read them. A list that is one page
    of a longer one (`metadata.continue` set: the API's own list read with a limit) is refused:
    taken whole, every object on the other pages would read as gone."""
    list_kind = str(document["kind"])
    metadata = document.get("metadata")
    if isinstance(metadata, dict) and metadata.get("continue"):
        raise SnapshotError(
            f"{file}: the {list_kind} is one page of a longer list (its metadata.continue is "
            "set): the objects on the other pages would read as gone; export the whole list "
            "(`kubectl get ... -A -o json` without --raw or a limit) and sync again"
        )
    item_kind = list_kind.removesuffix("List") if list_kind != "List" else None
    items = document.get("items")
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and _is_list(item):
            yield from _list_items(item, file)
        elif isinstance(item, dict) and item_kind and not item.get("kind"):
            yield {**item, "kind": item_kind}
        else:
            yield item  # a malformed item is left for normalise to report with its index
