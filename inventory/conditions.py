"""Judge a bulletin's condition ("CDI mode only", "only when CDI is enabled", "does not impact use
cases where CDI is used", "only when device-list-strategy is cdi-annotations and/or cdi-cri",
"with MIG enabled", "on systems with vGPU") against what is known of one node. PURE.

A condition that does not hold makes the node NOT AFFECTED, with the reason; one that cannot be
judged (a fact not known, or phrasing this module does not understand) keeps the node affected,
"condition unverified". Never a guess in the node's favour. Reasons carry a code and, for not
affected, the VEX justification an export would give (CSAF/OpenVEX `vulnerable_code_not_in_
execute_path`: the flawed code exists but this configuration never runs it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from inventory.bulletins.csaf.versions import is_below, parse_version, vers_contains

HOLDS, NOT_MET, UNVERIFIED, NOT_SCOPED = (
    "condition_holds",
    "condition_not_met",
    "condition_unverified",
    "condition_not_scoped",
)
NOT_IN_RANGE = "version_not_in_range"  # below a product_version_range's lower bound
NOT_PRESENT = "component_not_present"  # for components not installed (inventory.patching.status)
VEX_NOT_IN_PATH = "vulnerable_code_not_in_execute_path"
VEX_NOT_PRESENT = "component_not_present"
VEX_NOT_IN_CODE = "vulnerable_code_not_present"
CDI_STRATEGIES = frozenset({"cdi-annotations", "cdi-cri"})
_STRATEGY_NAMES = r"\b(envvar|volume-mounts|cdi-annotations|cdi-cri)\b"


@dataclass(frozen=True)
class NodeFacts:
    """What conditions are judged against; None means not known. `sources`: fact -> where it
    was read, quoted in the reason."""

    cdi: bool | None = None
    device_list_strategies: frozenset[str] | None = None
    mig: bool | None = None
    vgpu: bool | None = None
    sharing: str | None = None  # the node's sharing strategy, None when unknown
    envvar_unprivileged: bool | None = None
    sources: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    affected: bool | None  # True: holds; False: does not (not affected); None: unverified
    code: str
    text: str
    justification: str | None = None

    def as_reason(self) -> dict[str, str | None]:
        return {"code": self.code, "text": self.text, "justification": self.justification}


def evaluate(condition: str, facts: NodeFacts, installed: str | None = None) -> Verdict:
    """The verdict on every clause of `condition` (one per line): any clause that does not hold
    makes the node not affected; else any clause not judged leaves it unverified."""
    clauses = [c.strip() for c in condition.splitlines() if c.strip()]
    verdicts = [_clause(c, facts, installed) for c in clauses]
    if len(verdicts) == 1:
        return verdicts[0]
    for verdict in verdicts:
        if verdict.affected is False:
            return verdict
    unverified = [v for v in verdicts if v.affected is None]
    if unverified:
        return Verdict(None, UNVERIFIED, " ".join(v.text for v in unverified))
    return Verdict(True, HOLDS, " ".join(v.text for v in verdicts))


_SCOPE = re.compile(
    r"\s*\bfor versions?\s+(?P<phrase>prior to|before|below|older than|up to and including|"
    r"through)\s+v?(?P<version>\d+(?:\.\d+)+)",
    re.IGNORECASE,
)
# Each flips the sense once: "does not impact use cases where CDI is used" = only without CDI.
_NEGATIONS = re.compile(
    r"\b(?:does|do|did)\s+not\s+(?:impact|affect)|\bnot\s+affected\b|\bunless\b|\bwithout\b|"
    r"\b(?:is|are)\s+not\s+(?:used|enabled|in use|set|configured)\b|\bdisabled\b|"
    r"\bnot\s+in\s+use\b",
    re.IGNORECASE,
)


def _clause(clause: str, facts: NodeFacts, installed: str | None) -> Verdict:
    if clause.lower().startswith("vers:"):
        return _version_range(clause, installed)
    scope = _SCOPE.search(clause)
    if scope and installed and parse_version(installed):
        inclusive = scope["phrase"].lower() in ("up to and including", "through")
        if not is_below(installed, scope["version"], inclusive=inclusive):
            return Verdict(
                True,
                NOT_SCOPED,
                f'"{clause}" limits only versions {scope["phrase"]} {scope["version"]}: '
                f"{installed} is affected whatever the configuration.",
            )
    subject = _SCOPE.sub("", clause)
    negated = len(_NEGATIONS.findall(subject)) % 2 == 1
    for pattern, judge in _SUBJECTS:
        if re.search(pattern, subject, re.IGNORECASE):
            return judge(clause, subject, negated, facts)
    return Verdict(
        None,
        UNVERIFIED,
        f'Condition unverified: "{clause}" is not a condition '
        "gpuposture can check against the node's facts.",
    )


def _version_range(clause: str, installed: str | None) -> Verdict:
    """A product_version_range with a lower bound ("vers:generic/>=1.17.0|<1.17.8"): the upper
    bound put the node here; a version below the lower bound is another line's business."""
    inside = vers_contains(clause, installed) if installed else None
    if inside is None:
        return Verdict(None, UNVERIFIED, f'Condition unverified: range "{clause}" not judged.')
    if inside:
        return Verdict(True, HOLDS, f"{installed} is in the affected range {clause}.")
    text = f"Not affected: {installed} is outside the affected range {clause}."
    return Verdict(False, NOT_IN_RANGE, text, VEX_NOT_IN_CODE)


def _fact_verdict(
    clause: str,
    fact: str,
    value: bool | None,
    negated: bool,
    facts: NodeFacts,
    phrases: tuple[str, str],
) -> Verdict:
    """A yes/no fact; `phrases` say how the node reads when it is true and when false."""
    source = facts.sources.get(fact)
    where = f" ({source})" if source else ""
    if value is None:
        return Verdict(
            None,
            UNVERIFIED,
            f'Condition unverified: "{clause}", but {_UNKNOWN[fact]} is not known{where}.',
        )
    state = phrases[0] if value else phrases[1]
    if value is not negated:
        return Verdict(True, HOLDS, f'"{clause}" holds: {state}{where}.')
    text = f'Not affected: the bulletin limits this to "{clause}", and {state}{where}.'
    return Verdict(False, NOT_MET, text, VEX_NOT_IN_PATH)


def _flag(fact: str) -> Callable[[str, str, bool, NodeFacts], Verdict]:
    def judge(clause: str, subject: str, negated: bool, facts: NodeFacts) -> Verdict:
        return _fact_verdict(clause, fact, getattr(facts, fact), negated, facts, _PHRASES[fact])

    return judge


def _sharing(mode: str) -> Callable[[str, str, bool, NodeFacts], Verdict]:
    def judge(clause: str, subject: str, negated: bool, facts: NodeFacts) -> Verdict:
        value = None if facts.sharing in (None, "unknown") else facts.sharing == mode
        shown = f"the node's GPU sharing is {(facts.sharing or '').replace('_', '-')}"
        return _fact_verdict(clause, "sharing", value, negated, facts, (shown, shown))

    return judge


def _strategy(clause: str, subject: str, negated: bool, facts: NodeFacts) -> Verdict:
    named = {m.lower() for m in re.findall(_STRATEGY_NAMES, subject, re.IGNORECASE)}
    if not named:
        return Verdict(
            None,
            UNVERIFIED,
            f'Condition unverified: "{clause}" names no device list strategy gpuposture knows.',
        )
    strategies = facts.device_list_strategies
    if strategies is None and facts.cdi is False and named <= CDI_STRATEGIES:
        # A CDI device-list strategy needs CDI in the runtime: with CDI off it is not in use.
        phrases = ("", "CDI device injection is off, so no CDI device list strategy is in use")
        return _fact_verdict(clause, "cdi", False, negated, facts, phrases)
    value = None if strategies is None else bool(strategies & named)
    shown = f"the device plugin's device list strategy is {', '.join(sorted(strategies or ()))}"
    return _fact_verdict(clause, "device_list_strategy", value, negated, facts, (shown, shown))


_SUBJECTS: tuple[tuple[str, Callable[[str, str, bool, NodeFacts], Verdict]], ...] = (
    (
        r"accept-nvidia-visible-devices-envvar-when-unprivileged|unprivileged\W.{0,60}"
        r"NVIDIA_VISIBLE_DEVICES|NVIDIA_VISIBLE_DEVICES\W.{0,60}unprivileged",
        _flag("envvar_unprivileged"),
    ),
    (
        r"device[- ]?list[- ]?strateg|deviceListStrategy|device plugin uses\s+" + _STRATEGY_NAMES,
        _strategy,
    ),
    (r"\bCDI\b|container device interface", _flag("cdi")),
    (r"\bMIG\b|multi-instance GPU", _flag("mig")),
    (r"\bvGPU\b|virtual GPU", _flag("vgpu")),
    (r"\bMPS\b|multi-process service", _sharing("mps")),
    (r"time[- ]slic", _sharing("time_slicing")),
)
_PHRASES = {
    "cdi": ("CDI device injection is on", "CDI device injection is off"),
    "mig": ("MIG is enabled on the node", "MIG is not enabled on the node"),
    "vgpu": ("the node runs vGPU", "the node does not run vGPU"),
    "envvar_unprivileged": (
        "the toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged pods",
        "the toolkit ignores NVIDIA_VISIBLE_DEVICES from unprivileged pods",
    ),
}
_UNKNOWN = {
    "cdi": "whether the node uses CDI device injection",
    "mig": "whether MIG is enabled on the node",
    "vgpu": "whether the node runs vGPU",
    "sharing": "the node's GPU sharing mode",
    "device_list_strategy": "the device plugin's device list strategy",
    "envvar_unprivileged": (
        "whether the toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged pods"
    ),
}
