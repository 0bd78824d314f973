"""VEX statements for a cluster's GPU nodes: for each vulnerability a bulletin names and each
node component it concerns, whether that component on that node is affected, fixed or not
affected, and why. PURE: takes each node's patch judgement
(inventory.patching.status.PatchStatus, the same one the patch pages show) and returns frozen
statements that inventory.bulletins.vex.openvex and inventory.bulletins.vex.csaf write out.

- `affected`: the node's version is inside a fix's bound (a condition that holds or could not
  be verified keeps it affected: never a guess in the node's favour); the action is the
  upgrade to the fixed version.
- `not_affected`: inside a bound whose condition does not hold on the node ("CDI mode only"
  on a node not in CDI mode: `vulnerable_code_not_in_execute_path`), or the component is not
  installed there (`component_not_present`). The justification comes from
  inventory.conditions, the impact statement is its reason.
- `fixed`: the node's version is past the bound.
- `under_investigation`: the bulletin names the component without a bound the node's version
  is outside of (the vendor's own `under_investigation`, or affected with no version bound
  stated), or names the very version both affected and fixed, or the node runs (or may run)
  the component but its version was not read (inventory.patching.unread: the note says which
  input would tell), or the node's driver is on a branch no imported bulletin names: not
  known, never read as fixed or not affected, and never left out.

One vulnerability may have several bounds for one component (one for every install, a lower
one "CDI mode only"): the statement is the worst, affected over under_investigation over
not_affected over fixed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

from inventory.components import LABELS
from inventory.patching.status import BRANCH_UNLISTED, Exposure, PatchStatus
from inventory.patching.targets import Target, closed_range
from inventory.patching.unread import VERSION_NOT_READ

AFFECTED, NOT_AFFECTED, FIXED = "affected", "not_affected", "fixed"
UNDER_INVESTIGATION = "under_investigation"
_RANK = {AFFECTED: 0, UNDER_INVESTIGATION: 1, NOT_AFFECTED: 2, FIXED: 3}
# The justifications OpenVEX and CSAF share (CSAF's flag labels use the same words).
JUSTIFICATIONS = frozenset(
    {
        "component_not_present",
        "vulnerable_code_not_present",
        "vulnerable_code_not_in_execute_path",
        "vulnerable_code_cannot_be_controlled_by_adversary",
        "inline_mitigations_already_exist",
    }
)
# Component kind -> the package name a purl gives it (NVIDIA's own project names).
PACKAGES = {
    "driver": "nvidia-driver",
    "container_toolkit": "nvidia-container-toolkit",
    "device_plugin": "k8s-device-plugin",
    "gpu_operator": "gpu-operator",
    "dcgm_exporter": "dcgm-exporter",
    "mig_manager": "k8s-mig-manager",
    "dra_driver": "k8s-dra-driver-gpu",
    "firmware": "vbios",
}


@dataclass(frozen=True)
class NodeJudgement:
    """One GPU node of the cluster with its patch judgement."""

    name: str
    gpu_model: str | None
    status: PatchStatus


@dataclass(frozen=True)
class Product:
    """A component on a node: the thing a VEX statement is about."""

    node: str
    component: str
    version: str | None  # None: not installed on the node, or (`unread`) not read
    unread: bool = False  # installed, or possibly, but its version was not read

    @property
    def id(self) -> str:
        return f"{self.node}:{self.component}"

    @property
    def purl(self) -> str:
        """pkg:generic/nvidia/<package>[@version]?node=<node>: the node as a qualifier, so the
        same version on two nodes is two products (each has its own statement)."""
        version = f"@{quote(self.version, safe='.+-_~')}" if self.version else ""
        return f"pkg:generic/nvidia/{PACKAGES.get(self.component, self.component)}{version}" + (
            f"?node={quote(self.node, safe='.-_~')}"
        )

    @property
    def label(self) -> str:
        name = LABELS.get(self.component, self.component)
        version = "(version not read)" if self.unread else self.version or "(not installed)"
        return f"{name} {version} on node {self.node}"

    @property
    def name(self) -> str:
        """The component's name inside a sentence ("container toolkit", "DCGM exporter")."""
        name = LABELS.get(self.component, self.component)
        return name if name[1:2].isupper() else name[:1].lower() + name[1:]


@dataclass(frozen=True)
class Statement:
    vulnerability: str  # the CVE id, or the advisory id where a fix names no CVE
    advisory_id: str
    product: Product
    status: str  # AFFECTED / NOT_AFFECTED / FIXED / UNDER_INVESTIGATION
    justification: str | None = None  # not_affected only
    impact: str | None = None  # not_affected: why
    action: str | None = None  # affected: what to do
    fixed_version: str | None = None
    affected_range: str = ""  # "< 1.17.8"
    severity: str | None = None
    max_cvss: float | None = None
    condition: str | None = None
    condition_status: str | None = None
    # affected: the bulletin's remediations, (category, details, url) each.
    remedies: tuple[tuple[str, str, str], ...] = ()


# Remediations that lower the exposure before (or without) an upgrade.
INTERIM = ("mitigation", "workaround")


def cluster_statements(nodes: Iterable[NodeJudgement]) -> list[Statement]:
    """Every statement for `nodes`, one per (vulnerability, node component), sorted by
    vulnerability, node and component."""
    best: dict[tuple[str, str], Statement] = {}
    for node in nodes:
        judged = (
            [(e, AFFECTED) for e in node.status.exposures]
            + [(e, NOT_AFFECTED) for e in node.status.not_affected]
            + [(e, FIXED) for e in node.status.fixed]
            + [(e, UNDER_INVESTIGATION) for e in node.status.investigating]
            + [(e, UNDER_INVESTIGATION) for e in node.status.unread]
        )
        for exposure, status in judged:
            for statement in _statements(node.name, exposure, status):
                key = (statement.vulnerability, statement.product.id)
                held = best.get(key)
                if held is None or _RANK[statement.status] < _RANK[held.status]:
                    best[key] = statement
    return sorted(
        best.values(), key=lambda s: (s.vulnerability, s.product.node, s.product.component)
    )


def _statements(node: str, exposure: Exposure, status: str) -> list[Statement]:
    code = (exposure.reason or {}).get("code")
    product = Product(node, exposure.component, exposure.installed, code == VERSION_NOT_READ)
    names = list(exposure.cves) or [exposure.advisory_id]
    common = {
        "advisory_id": exposure.advisory_id,
        "product": product,
        "status": status,
        "fixed_version": exposure.fixed_version,
        "affected_range": exposure.affected,
        "severity": exposure.severity,
        "max_cvss": exposure.max_cvss,
        "condition": exposure.condition,
        "condition_status": exposure.condition_status,
    }
    if status == AFFECTED:
        common["action"] = _action(product, exposure)
        common["remedies"] = exposure.remedies
    elif status == NOT_AFFECTED:
        reason = exposure.reason or {}
        justification = reason.get("justification")
        # A not-affected record always carries its reason; a justification outside the
        # standard list would make both formats invalid, so it is read as the closest one.
        common["justification"] = (
            justification if justification in JUSTIFICATIONS else "vulnerable_code_not_present"
        )
        common["impact"] = reason.get("text") or f"Not affected ({exposure.condition})."
    elif status == UNDER_INVESTIGATION and code == "contradictory_bulletin":
        why = (exposure.reason or {}).get("text")
        common["impact"] = f"{product.label}: {why}: not known whether it is affected."
    elif status == UNDER_INVESTIGATION and code == BRANCH_UNLISTED:
        why = (exposure.reason or {}).get("text")
        common["impact"] = (
            f"{product.label}: {why}: not known whether {exposure.advisory_id} affects it "
            "(another branch's fixed version says nothing of this one)."
        )
    elif status == UNDER_INVESTIGATION and code == VERSION_NOT_READ:
        why = (exposure.reason or {}).get("text")
        common["impact"] = (
            f"The version of the {product.name} was not read on node {node}: {why}. "
            f"Not known whether it is affected by {exposure.advisory_id}."
        )
    elif status == UNDER_INVESTIGATION:
        why = (exposure.reason or {}).get("text") or "no version bound stated"
        common["impact"] = (
            f"{product.label}: {exposure.advisory_id} names it without a version bound that "
            f"leaves it out ({why}): not known whether it is affected."
        )
    return [Statement(vulnerability=name, **common) for name in names]


def _action(product: Product, exposure: Exposure) -> str:
    label = LABELS.get(product.component, product.component)
    target = (
        f"to {exposure.fixed_version} or later"
        if exposure.fixed_version
        else "once a fixed version is released (none is named yet)"
    )
    bound = closed_range(exposure.affected, exposure.component, product.version or "")
    if not exposure.fixed_version and bound is not None:
        # A range closed above whose fixed version is unknown (NVIDIA 5703's R535 vGPU Manager
        # row: its fix a typo the import drops): any version past the bound is out of it.
        moved = Target(None, bound).words()
        target = f"{moved} (no fixed version is named; versions {bound} are affected)"
    if not exposure.fixed_version and exposure.no_fix:
        return (
            f"No fixed {label.lower()} for node {product.node} ({product.version}): "
            f"{exposure.advisory_id} says {exposure.no_fix}. Isolate or replace the component; "
            "an upgrade does not remove this exposure."
        )
    text = (
        f"Upgrade the {label.lower()} on node {product.node} from {product.version} {target} "
        f"({exposure.advisory_id})."
    )
    if exposure.condition_status == "unverified":
        text += (
            f" The bulletin limits this to: {exposure.condition}; that could not be verified "
            "on the node, so it is treated as affected."
        )
    elif exposure.condition_status == "holds":
        text += f" The bulletin's condition holds on the node: {exposure.condition}."
    return text + _interim(exposure)


def _interim(exposure: Exposure) -> str:
    """The bulletin's mitigations and workarounds, in its words: what to do until the
    upgrade (or instead of one, where none exists)."""
    said = [
        f" {category.capitalize()} ({exposure.advisory_id}): {details or url}"
        + (f" ({url})" if details and url else "")
        for category, details, url in exposure.remedies
        if category in INTERIM and (details or url)
    ]
    return "".join(text if text.endswith(".") else f"{text}." for text in said)


def counts(statements: Iterable[Statement]) -> dict[str, int]:
    found = {AFFECTED: 0, NOT_AFFECTED: 0, FIXED: 0, UNDER_INVESTIGATION: 0}
    for statement in statements:
        found[statement.status] += 1
    return found
