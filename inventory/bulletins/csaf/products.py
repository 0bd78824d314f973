"""Which inventory component an NVIDIA CSAF product is, and the version bound its name states.

NVIDIA's CSAF has no version ranges: the tree is vendor > architecture "Linux(R535)" >
product_version "Tesla", and the bound is free text in the product name ("All driver versions
prior to 535.230.02"), or a plain version for the fixed product.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cmp_to_key
from urllib.parse import unquote

from inventory.bulletins.csaf.document import Product
from inventory.bulletins.csaf.versions import compare, parse_version, vers_contains

_ARCH = re.compile(r"^(?P<prefix>.*?)\s*\((?P<inner>[^()]*)\)\s*$")
_R_BRANCH = re.compile(r"\bR(\d{3})\b")
_VGPU = re.compile(r"\bvGPU\s+(\d+)\b", re.IGNORECASE)
_VERSION = r"(?:vGPU\s+)?v?\d+(?:\.\d+)*"
_INCLUSIVE = r"up to and including|prior to and including|through"
# "All driver versions prior to 535.230.02", and the shorter forms other vendors write:
# "versions prior to 1.17.8", "prior to 1.17.8", "before 1.17.8", "< 1.17.8", "<=1.17.7".
_RANGE = re.compile(
    rf"^(?:all\s+)?(?:(?:drivers?\s+)?versions?\s+)?"
    rf"(?P<phrase>{_INCLUSIVE}|prior to|before|earlier than|older than|<=|<)\s*"
    rf"(?P<version>{_VERSION})(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_FROM_TO = re.compile(rf"^(?:from\s+)?{_VERSION}\s+to\s+(?P<version>{_VERSION})(?P<rest>.*)$", re.I)
_PLAIN = re.compile(rf"^(?P<version>{_VERSION})(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_LABEL = re.compile(r"release|latest|^vgpu (?:software )?[\d.]+$|^\s*$", re.IGNORECASE)
# Data-center GPU model names: A100, H100, H200, B200, GB200, GH200, L40S, L4, T4, V100.
_GPU_MODEL = re.compile(r"\b((?:GB|GH|[ABHLTVPK])\d{1,3}[A-Z]?)\b")
_VERS_UPPER = re.compile(r"(?P<op><=|<)\s*(?P<version>[0-9][^|]*)")

# Ordered: the first phrase found in the product label decides the kind.
_KINDS: tuple[tuple[str, str], ...] = (
    ("container toolkit", "container_toolkit"),
    ("gpu operator", "gpu_operator"),
    ("device plugin", "device_plugin"),
    # "NVIDIA DRA Driver for GPUs": before "driver" could ever be read as the GPU driver.
    ("dra driver", "dra_driver"),
    ("mig manager", "mig_manager"),
    ("dcgm exporter", "dcgm_exporter"),
    ("dcgm", "dcgm"),
    ("data center gpu manager", "dcgm"),
    ("kai scheduler", "kai_scheduler"),
    ("firmware", "firmware"),
    ("vbios", "firmware"),
    ("virtual gpu manager", "vgpu_manager"),
    ("guest driver", "vgpu_guest"),
)
_LINES: tuple[tuple[str, str], ...] = (
    ("tesla", "tesla"),
    # NVIDIA's newer name for the Tesla line ("Data Center GPU driver").
    ("data center", "tesla"),
    ("datacenter", "tesla"),
    ("studio", "studio"),
    ("geforce", "geforce"),
    ("rtx", "rtx"),
    ("quadro", "rtx"),
)


@dataclass(frozen=True)
class Component:
    """An inventory component: kind, OS, driver branch and product line (tesla, geforce, vGPU 16).

    `host` keeps a non-plain architecture verbatim ("Windows 7 and 8.x", "VMware vSphere"), so
    two architectures with different fixes never pair with each other.
    """

    kind: str
    platform: str | None
    branch: str | None
    line: str | None
    host: str | None = None


# Bound op of a product the bulletin does not bound: under investigation, or affected with no
# version bound it states (a bare product name, an unreadable range). Its version is the highest
# version it could concern, or ALL_VERSIONS. Never read as "not affected".
OPEN = "?"
ALL_VERSIONS = "*"
# Bound op of a range with no upper end ("vers:generic/*", "vers:generic/>=1.16.0"): every
# version (from its lower end, kept as the condition) is affected.
EVERY = "*"


@dataclass(frozen=True)
class Bound:
    """A version bound: op '<', '<=', '==' or OPEN; condition is free text kept verbatim."""

    op: str
    version: str
    condition: str | None = None


def classify(product: Product) -> Component | None:
    """The component a product describes, or None when it is not one gpuposture inventories."""
    prefix, inner = _architecture(product)
    families = [name for category, name in product.branch_path if category == "product_family"]
    # The innermost product name first; then the product's full name, its product family
    # (product_family "NVIDIA Container Toolkit" > product_version "1.17.7"), and its
    # identification helper (a product known only as "pkg:.../nvidia-container-toolkit").
    kind, label = None, ""
    for text in (_label(product), product.name, *reversed(families), _identity(product)):
        label = _words(text)
        kind = _kind(label, inner) if label else None
        if kind is not None:
            break
    if kind is None:
        return None
    line = _line(kind, label, inner)
    if kind == "driver" and line is None:
        return None
    return Component(
        kind=kind,
        platform=_platform(prefix),
        branch=_branch(inner),
        line=line,
        host=prefix if prefix and prefix not in ("Linux", "Windows", "All") else None,
    )


def _label(product: Product) -> str:
    names = [name for category, name in product.branch_path if category == "product_name"]
    if names:
        return names[-1]
    versions = [name for category, name in product.branch_path if category == "product_version"]
    return versions[-1] if versions else product.reference_name or product.name


def _words(text: str) -> str:
    """Package and CPE spellings as words: "nvidia-container-toolkit", "container_toolkit"."""
    return re.sub(r"[-_]+", " ", text)


_PURL = re.compile(r"^pkg:(?P<type>[^/]+)/(?:[^@?#]*/)?(?P<name>[^/@?#]+)(?:@(?P<version>[^?#]+))?")


def _identity(product: Product) -> str:
    """The package name a purl, and the product a CPE 2.3 names (vendor:product), as words."""
    found = []
    match = _PURL.match(product.purl or "")
    if match:
        found.append(unquote(match["name"]))
    parts = (product.cpe or "").split(":")
    if len(parts) > 4 and parts[0] == "cpe":
        found.append(parts[4] if parts[1] == "2.3" else parts[3])
    return _words(" ".join(found))


def _architecture(product: Product) -> tuple[str | None, str | None]:
    for category, name in product.branch_path:
        if category == "architecture":
            match = _ARCH.match(name)
            return (match["prefix"], match["inner"]) if match else (name, None)
    return None, None


def _kind(label: str, inner: str | None) -> str | None:
    lowered = label.lower()
    gaming = "gaming" in lowered or "gaming" in (inner or "").lower()
    if gaming:
        return "cloud_gaming_manager" if "manager" in lowered else "cloud_gaming_guest"
    for phrase, kind in _KINDS:
        if phrase in lowered:
            return kind
    if any(phrase in lowered for phrase, _ in _LINES):
        return "driver"
    return None


def _line(kind: str, label: str, inner: str | None) -> str | None:
    if kind == "firmware":
        return gpu_model_token(label, inner or "")
    if kind in ("vgpu_guest", "vgpu_manager"):
        match = _VGPU.search(inner or "")
        return f"vGPU {match[1]}" if match else None
    if kind != "driver":
        return None
    lowered = label.lower()
    lines = sorted({line for phrase, line in _LINES if phrase in lowered})
    return "+".join(lines) if lines else None


def gpu_model_token(*texts: str) -> str | None:
    """The GPU model a firmware product names (H100, A100, GH200, L40S, T4), upper case; the
    line of a firmware component, matched against a node's GFD product label."""
    for value in texts:
        match = _GPU_MODEL.search(value)
        if match:
            return match[1].upper()
    return None


def _platform(prefix: str | None) -> str | None:
    if prefix == "Linux":
        return "linux"
    if prefix and (prefix.startswith("Windows") or prefix.startswith("Microsoft Windows")):
        return "windows"
    return None


def _branch(inner: str | None) -> str | None:
    if not inner:
        return None
    match = _R_BRANCH.search(inner)
    if match:
        return f"R{match[1]}"
    return inner if re.fullmatch(r"\d+(?:\.\d+)*", inner.strip()) else None


# --- bounds -------------------------------------------------------------------------------------


def bound(product: Product) -> Bound | None:
    """The version bound a product states, or None when it holds no version. NVIDIA writes it
    in the product name; the CSAF tree's own shape (product_name "NVIDIA Container Toolkit" >
    product_version "1.17.7", product name "NVIDIA Container Toolkit 1.17.7") in the
    innermost product_version branch name."""
    if product.version_range:
        text = _operator_range(product.version_range) or product.version_range
        return _vers_bound(text) or _text_bound(text)
    # A relationship's own name ("... as a component of Ubuntu 22.04") states no version.
    name = product.reference_name or product.name
    stated = _text_bound(name)
    if stated is None:
        versions = [name for category, name in product.branch_path if category == "product_version"]
        stated = _text_bound(versions[-1]) if versions else None
    return stated or _named_bound(name) or _helper_bound(product)


# "NVIDIA Container Toolkit 1.17.7", "NVIDIA GPU Operator versions prior to 25.3.2",
# "nvidia-container-toolkit v1.17.7 and earlier": the bound right after the component's name.
_NAMED = re.compile(
    rf"(?:{'|'.join(re.escape(phrase) for phrase, _ in _KINDS)})\s+"
    rf"(?P<bound>(?:(?:all\s+)?versions?\s+)?(?:{_INCLUSIVE}|prior to|before|earlier than|"
    r"older than|<=|<)?\s*v?\d+(?:\.\d+)+"
    r"(?:\s+(?:and|or)\s+(?:earlier|prior|older|lower|below))?)",
    re.IGNORECASE,
)


def _named_bound(name: str) -> Bound | None:
    words = _words(name)
    match = _NAMED.search(words)
    if not match:
        return None
    text, rest = match["bound"], _condition(words[match.end() :])
    earlier = re.search(r"\s+(?:and|or)\s+\w+$", text)
    if earlier:
        return Bound("<=", _clean(text[: earlier.start()].split()[-1]), rest)
    stated = _text_bound(text)
    return replace(stated, condition=stated.condition or rest) if stated else None


def _helper_bound(product: Product) -> Bound | None:
    """The version a purl or a CPE 2.3 states, as the one version the product is. Distribution
    packages (rpm, deb, apk) give their upstream version: epoch and release dropped."""
    match = _PURL.match(product.purl or "")
    if match and match["version"]:
        version = unquote(match["version"])
        if match["type"] in ("rpm", "deb", "apk"):
            version = re.sub(r"^\d+:", "", version).rsplit("-", 1)[0]
        version = _clean(version)
        if parse_version(version):
            return Bound("==", version)
    parts = (product.cpe or "").split(":")
    if len(parts) > 5 and parts[:2] == ["cpe", "2.3"] and parts[5] not in ("*", "-", ""):
        version = parts[5]
        if re.fullmatch(r"\d+(?:_\d+)+", version):  # NVIDIA writes 535_230_02
            version = version.replace("_", ".")
        if parse_version(_clean(version)):
            return Bound("==", _clean(version))
    return None


def _text_bound(text: str) -> Bound | None:
    text = text.strip()
    match = _RANGE.match(text)
    if match:
        phrase = match["phrase"]
        inclusive = phrase == "<=" or re.fullmatch(_INCLUSIVE, phrase, re.IGNORECASE) is not None
        return Bound(
            "<=" if inclusive else "<", _clean(match["version"]), _condition(match["rest"])
        )
    match = _FROM_TO.match(text)
    if match:
        return Bound("<=", _clean(match["version"]), _condition(match["rest"]))
    match = _PLAIN.match(text)
    if match:
        return _plain(_clean(match["version"]), match["rest"])
    return None


def _plain(version: str, rest: str) -> Bound:
    # vGPU style: "535.216.01(All versions up to and including vGPU 16.8)" is the last affected.
    inner = rest.strip()
    if inner.startswith("(") and inner.endswith(")"):
        inner = inner[1:-1]
    if re.search(_INCLUSIVE, inner, re.IGNORECASE):
        return Bound("<=", version)
    if re.match(r"all versions prior to", inner, re.IGNORECASE):
        return Bound("<", version)
    return Bound("==", version, _condition(rest))


def _condition(rest: str) -> str | None:
    text = rest.strip().lstrip(".,;: ")
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    return None if _LABEL.search(text) else text


def _clean(version: str) -> str:
    return re.sub(r"^(?:v(?=\d))", "", version.strip(), flags=re.IGNORECASE)


_OPERATOR = re.compile(r"(>=|<=|>|<|=)\s*v?(\d[\w.+\-]*)")
_HYPHEN = re.compile(r"^\s*v?(\d[\w.+]*)\s+(?:-|to|through)\s+v?(\d[\w.+]*)\s*$", re.IGNORECASE)


def _operator_range(text: str) -> str | None:
    """A free-text range as vers: ">=1.16.0 <1.17.8", ">=1.16.0, <1.17.8", ">= 1.16.0 &&
    < 1.17.8", "1.16.0 - 1.17.7" (both ends included); None for any other text."""
    if text.strip().lower().startswith("vers:"):
        return None
    hyphen = _HYPHEN.match(text)
    if hyphen:
        return f"vers:generic/>={hyphen[1]}|<={hyphen[2]}"
    found = _OPERATOR.findall(text)
    if (
        not found
        or _OPERATOR.sub("", text).strip(" ,;&|\t")
        or not any(op.startswith("<") for op, _ in found)
    ):
        return None
    return "vers:generic/" + "|".join(f"{op}{version}" for op, version in found)


def _vers_bound(version_range: str) -> Bound | None:
    """The highest upper bound of a range; with a lower bound or several intervals
    ("vers:generic/>=1.16.0|<1.16.3|>=1.17.0|<1.17.8") the range itself is kept as the
    condition, judged by inventory.conditions. Not the first upper bound: 1.17.4 is past
    1.16.3 and still affected."""
    uppers = [m for m in _VERS_UPPER.finditer(version_range) if parse_version(m["version"].strip())]
    if not uppers:
        scheme, _, body = version_range.strip().partition("/")
        if not scheme.lower().startswith("vers:") or vers_contains(version_range, "0") is None:
            return None  # not a vers range this reads: left open, never read as a bound
        return Bound(EVERY, ALL_VERSIONS, None if body.strip() == "*" else version_range)
    match = max(
        uppers, key=cmp_to_key(lambda a, b: compare(a["version"].strip(), b["version"].strip()))
    )
    rest = version_range.replace(match.group(0), "")
    lower = ">" in rest or len(uppers) > 1
    return Bound(match["op"], match["version"].strip(), version_range if lower else None)


def branch_mismatch(component: Component, version: str) -> bool:
    """True when a driver version cannot belong to the component's R branch (upstream typo).

    Windows and vGPU builds run a few above the branch number (R550 -> 553.20), never 10 or more.
    """
    branch = _R_BRANCH.search(component.branch or "")
    major = re.match(r"(\d+)\.", version)
    if not branch or not major:
        return False
    return not 0 <= int(major[1]) - int(branch[1]) < 10
