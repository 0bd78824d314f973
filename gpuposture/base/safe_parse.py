"""YAML and JSON from a cluster or a user, parsed within limits. PURE: no Django, no network.

Anyone who can write a ConfigMap, post to the API or upload a file decides what our parsers
see. PyYAML's pure-Python composer recurses once per nesting level (RecursionError at about
1,000), libyaml's C composer crashes the whole process at about 200,000 levels of `[`, and
aliases (`*name`) let a few hundred bytes stand for a billion nodes once something walks them.
So size, nesting depth and alias count are checked before a document is composed, and every
way a parser can fail comes out as one error, SafeParseError, with a message a person can act
on ("nested deeper than 64 levels").

YAML is checked with the parser's own event stream (libyaml's when PyYAML has it): it is
iterative, so it reads any depth without recursing, it knows quotes, comments, block scalars,
flow and block nesting exactly, and it stops at the first level past the limit.
JSON: Python's C decoder refuses deep nesting with a clean RecursionError, so a very large
document (a cluster snapshot) relies on that (`max_depth=None`); small payloads that our own
code then walks are scanned first, strings skipped, brackets counted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import yaml

# What nests deeper than this is not a configuration, a tenant file or an API request: real
# ones stay under 20 (a CSAF advisory 11, a kubectl List of pods about 10).
DEFAULT_MAX_DEPTH = 64
# libyaml's parser and loader when PyYAML was built with it (the PyPI wheels are): the same
# safe subset of YAML, several times faster than the pure-Python ones.
_EVENT_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPENS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSES = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
# A JSON string (escapes included) or one bracket; everything else between them is skipped.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


class SafeParseError(ValueError):
    """The document was refused: too large, nested too deeply, too many aliases, or not
    valid YAML / JSON. The message says which."""


def load_yaml(
    text: str | bytes,
    *,
    max_bytes: int,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_aliases: int = 0,
    loader: type = _EVENT_LOADER,
) -> Any:
    """The one YAML document in `text` (safe tags only), within the limits."""
    documents = load_yaml_all(
        text, max_bytes=max_bytes, max_depth=max_depth, max_aliases=max_aliases, loader=loader
    )
    if len(documents) > 1:
        raise SafeParseError("not valid YAML: expected one document, found several (---)")
    return documents[0] if documents else None


def load_yaml_all(
    text: str | bytes,
    *,
    max_bytes: int,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_aliases: int = 0,
    loader: type = _EVENT_LOADER,
) -> list[Any]:
    """Every document of a `---` separated YAML stream (empty ones dropped), within the limits.
    `loader` must be a SafeLoader (or CSafeLoader) or a subclass of one."""
    text = _text(text, max_bytes)
    try:
        _check_yaml_events(text, max_depth=max_depth, max_aliases=max_aliases)
        return [doc for doc in yaml.load_all(text, Loader=loader) if doc is not None]  # noqa: S506
    except SafeParseError:
        raise
    except yaml.YAMLError as exc:
        raise SafeParseError(f"not valid YAML: {_first_line(exc)}") from exc
    except RecursionError as exc:  # the limits above make this unreachable; never crash anyway
        raise SafeParseError(f"not valid YAML: nested too deeply to read ({exc})") from exc
    except (ValueError, TypeError, OverflowError, MemoryError) as exc:
        # A constructor refusing a value (a date out of range, an unhashable key) is bad input.
        raise SafeParseError(f"not valid YAML: {type(exc).__name__}: {exc}") from exc


def load_json(
    text: str | bytes,
    *,
    max_bytes: int,
    max_depth: int | None = DEFAULT_MAX_DEPTH,
    allow_nan: bool = True,
) -> Any:
    """The JSON value in `text`, within the limits. `max_depth=None` skips the scan for large
    documents read only by code that does not recurse; the decoder's own recursion guard
    still refuses absurd nesting with a clean error."""
    text = _text(text, max_bytes)
    if max_depth is not None:
        _check_json_depth(text, max_depth)
    try:
        if allow_nan:
            return json.loads(text)
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError as exc:
        raise SafeParseError("not valid JSON: nested too deeply to read") from exc
    except ValueError as exc:
        raise SafeParseError(f"not valid JSON: {exc}") from exc


def load_json_values(
    text: str | bytes, *, max_bytes: int, skip: Callable[[str, int], int] | None = None
) -> list[Any]:
    """Every JSON value in `text`, one after another: `kubectl get ... -o json >> file` run
    once per kind leaves several documents in one file. Whitespace between them is skipped,
    and so is what `skip(text, at)` says is not a document (it returns where the next one may
    start, `at` itself when nothing is skipped; it raises SafeParseError for what it
    recognises but cannot take); anything else is an error naming where. No depth scan (see
    load_json's `max_depth=None`)."""
    text = _text(text, max_bytes)
    decoder = json.JSONDecoder()
    values: list[Any] = []
    at = _skip_space(text, 0)
    try:
        while at < len(text):
            if skip is not None and (after := skip(text, at)) != at:
                at = _skip_space(text, after)
                continue
            value, at = decoder.raw_decode(text, at)
            values.append(value)
            at = _skip_space(text, at)
    except RecursionError as exc:
        raise SafeParseError("not valid JSON: nested too deeply to read") from exc
    except SafeParseError:
        raise  # skip's own, already saying what it is
    except ValueError as exc:
        raise SafeParseError(f"not valid JSON: {exc}") from exc
    if not values:
        raise SafeParseError("not valid JSON: the file is empty")
    return values


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _text(text: str | bytes, max_bytes: int) -> str:
    """`text` as str, refused when its UTF-8 form is over `max_bytes`."""
    if isinstance(text, bytes | bytearray):
        size = len(text)
        _check_size(size, max_bytes)
        encoding = _encoding(bytes(text[:4]))
        try:
            # -sig: a byte-order mark (PowerShell writes one) is not part of the document.
            return bytes(text).decode(encoding)
        except UnicodeDecodeError as exc:
            name = "UTF-8" if encoding == "utf-8-sig" else encoding.upper()
            raise SafeParseError(f"cannot be read as {name} text (byte {exc.start})") from exc
    # Encoding costs a copy: only when the character count leaves the byte count in doubt.
    if len(text) > max_bytes or 4 * len(text) > max_bytes:
        _check_size(len(text.encode("utf-8", "surrogatepass")), max_bytes)
    return text


def _encoding(start: bytes) -> str:
    """UTF-8 unless a byte-order mark says UTF-16 or UTF-32: Windows PowerShell 5's `>`
    writes `kubectl get ... -o json` as UTF-16 with a mark. The codecs drop the mark."""
    if start.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "utf-32"
    if start.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    return "utf-8-sig"


def _check_size(size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise SafeParseError(f"too large: {_bytes(size)}; the limit is {_bytes(max_bytes)}")


def _bytes(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MiB"
    return f"{n / 1024:.0f} KiB" if n >= 1024 else f"{n} bytes"


def _check_yaml_events(text: str, *, max_depth: int, max_aliases: int) -> None:
    depth = aliases = 0
    for event in _events(text):
        if isinstance(event, _OPENS):
            depth += 1
            if depth > max_depth:
                raise SafeParseError(f"nested deeper than {max_depth} levels (line {_line(event)})")
        elif isinstance(event, _CLOSES):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > max_aliases:
                where = f"line {_line(event)}: "
                if not max_aliases:
                    raise SafeParseError(where + "YAML aliases (*name) are not allowed")
                raise SafeParseError(
                    f"{where}more than {max_aliases} YAML aliases (*name): each repeats a "
                    "whole subtree, so a few can stand for billions of nodes"
                )


def _events(text: str) -> Iterator[Any]:
    return yaml.parse(text, Loader=_EVENT_LOADER)  # noqa: S506 - events only, nothing built


def _line(event: Any) -> int:
    mark = getattr(event, "start_mark", None)
    return mark.line + 1 if mark is not None else 0


def _check_json_depth(text: str, max_depth: int) -> None:
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > max_depth:
                raise SafeParseError(
                    f"nested deeper than {max_depth} levels (at character {match.start()})"
                )
        elif token in ("]", "}"):
            depth -= 1


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]
