"""Distribution packages in a CSAF product tree (Red Hat, SUSE, Debian, Ubuntu advisories).

A distribution builds its own packages and backports fixes into them: "nvidia-container-toolkit
1.17.4-150200.5.11.1" may fix a flaw that upstream fixed only in 1.17.8. So the upstream
version a node reports (the toolkit or driver version the cluster shows) is not comparable
with a distribution's package release: a pairing that would rest on that is not made.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from inventory.bulletins.csaf.document import Product
from inventory.bulletins.csaf.versions import compare, parse_version

if TYPE_CHECKING:
    from inventory.bulletins.csaf.products import Bound, Component

# name-[epoch:]version-release[.arch]: an rpm NEVRA ("telnet-1:0.17-65.el7_6.x86_64") or a
# deb name with its Debian version ("nvidia-container-toolkit-1.17.8-1").
_NEVRA = re.compile(
    r"^(?P<name>[A-Za-z0-9][\w.+]*(?:-[A-Za-z][\w.+]*)*)-(?:\d+:)?(?P<version>\d[\w.+~^]*)"
    r"-(?P<release>[\w.+~^]+?)(?:\.(?:x86_64|aarch64|ppc64le|s390x|noarch|src|i686))?$"
)
_PURL = re.compile(
    r"^pkg:(?P<type>rpm|deb|apk)/(?:[^@?#]*/)?(?P<name>[^/@?#]+)@(?P<version>[^?#]+)"
)


def distribution_package(product: Product) -> str | None:
    """ "<package> <version>-<release>" when the product is a distribution's package build (an
    rpm, deb or apk purl with a release, or a name spelled as one); None otherwise."""
    match = _PURL.match(product.purl or "")
    if match:
        version = re.sub(r"^\d+:", "", unquote(match["version"]))
        if "-" in version:
            return f"{unquote(match['name'])} {version}"
    versions = [name for category, name in product.branch_path if category == "product_version"]
    for text in (product.reference_name, *versions[-1:], product.name):
        spelled = _NEVRA.match((text or "").strip())
        if spelled:
            return f"{spelled['name']} {spelled['version']}-{spelled['release']}"
    return None


def upstream_version(product: Product) -> str | None:
    """The upstream version a package build spelled as a name states ("...-0:1.17.8-1.el9"
    states 1.17.8), as a purl's is read (inventory.bulletins.csaf.products): epoch and release
    dropped. None when the product is not spelled as one."""
    versions = [name for category, name in product.branch_path if category == "product_version"]
    for text in (product.reference_name, *versions[-1:], product.name):
        spelled = _NEVRA.match((text or "").strip())
        if spelled and parse_version(spelled["version"]):
            return spelled["version"]
    return None


def unpaired_reason(package: str, kind: str) -> str:
    return (
        f"distribution package {package} is listed fixed with no affected version to pair: a "
        "distribution backports fixes into its own package releases, so a node's upstream "
        f"{kind.replace('_', ' ')} version is not compared with it (nodes are not judged by "
        "it; check the host's package manager)"
    )


def backport_reason(package: str, affected: str) -> str:
    return (
        f"distribution package {package} fixes it in a release of a version the affected "
        f"product also names ({affected}): a backport; a node's upstream version cannot tell "
        "the two releases apart, so it is not judged by this pair"
    )


def backports(
    pairs: list[Any], fixed: list[tuple[Product, Component, Bound]]
) -> tuple[list[Any], list[tuple[Product, str]]]:
    """Pairs (component, affected bound, fixed version, ...) less those whose fix is a
    distribution package at an upstream version the affected bound still covers
    (1.17.4-150200.5.11.1 fixes what 1.17.4-150200.5.8.1 had): the release decides, which a
    node's upstream version does not show. Pairing would read a node at 1.17.4 below a
    baseline of 1.17.4, or one past it as fixed; each is returned as (product, why) instead."""
    packages = {
        (component, stated.version): (product, package)
        for product, component, stated in fixed
        if (package := distribution_package(product))
    }
    kept, dropped = [], []
    for pair in pairs:
        component, affected, fixed_version = pair[0], pair[1], pair[2]
        found = packages.get((component, fixed_version)) if fixed_version else None
        if found and affected.op in ("<", "<=", "==") and _covers(affected, fixed_version):
            product, package = found
            bound_text = f"{affected.op} {affected.version}"
            dropped.append((product, backport_reason(package, bound_text)))
            continue
        kept.append(pair)
    return kept, dropped


def _covers(affected: Bound, version: str) -> bool:
    try:
        order = compare(version, affected.version)
    except ValueError:
        return True  # not comparable: not compared
    return order < 0 or (order == 0 and affected.op in ("<=", "=="))
