"""The names the Kubernetes API allows, so a name it never hands out is malformed input.

A node's name is a DNS-1123 subdomain (the API server validates it on create, and a node is
matched by name across sources: the API, nvidia-smi imports, DCGM's Hostname). Every other name
and namespace is held to the rule the API server applies to all names, a path segment (no '/',
no '%', not '.' or '..'), and no control characters: manifests rendered from charts carry
placeholders such as a namespace `FILLED BY THE OPERATOR`, which are read as written. A name
outside these came from a hand-edited or generated file: it matches nothing the cluster runs,
breaks the pages' URLs, and a NUL byte in it is refused by PostgreSQL mid-write (a NUL in any
other string is removed: inventory.sources.nul_strings). Pure: no Django.
"""

from __future__ import annotations

import re

# k8s.io/apimachinery/pkg/util/validation: IsDNS1123Subdomain.
_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
SUBDOMAIN_MAX = 253

SUBDOMAIN_RULE = (
    "lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, "
    f"at most {SUBDOMAIN_MAX} characters (a DNS-1123 subdomain)"
)
# A NUL elsewhere is removed (nul_strings); in a name, the object it names is not known.
NUL_PROBLEM = "not a valid name: it holds a NUL byte (\\u0000), which no Kubernetes name can"
SEGMENT_RULE = "no '/', '%' or control characters, and not '.' or '..'"
# '/' and '%' (apimachinery's ValidatePathSegmentName) and the control characters (Cc).
_SEGMENT_BAD = re.compile(r"[/%\x00-\x1f\x7f-\x9f]")


def subdomain_problem(name: str) -> str | None:
    if len(name) <= SUBDOMAIN_MAX and _DNS1123_SUBDOMAIN.fullmatch(name):
        return None
    return f"not a valid name: use {SUBDOMAIN_RULE}"


def segment_problem(name: str) -> str | None:
    if "\x00" in name:
        return NUL_PROBLEM
    if name in (".", "..") or _SEGMENT_BAD.search(name):
        return f"not a valid name: {SEGMENT_RULE}"
    return None


def name_problem(kind: str, name: str) -> str | None:
    """Why the API server would refuse `name` for an object of `kind`, or None."""
    if "\x00" in name:
        return NUL_PROBLEM
    return subdomain_problem(name) if kind == "Node" else segment_problem(name)
