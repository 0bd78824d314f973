"""Which trust class a node pool is for, by its taints (DESIGN §3 "Class pools"). PURE.

One rule for K8S-002 ("is this GPU node tainted for a class at all") and POD-009 ("is this node
tainted for the pod's class"): a NoSchedule or NoExecute taint whose key is one of
GPUPOSTURE_POOL_TAINT_KEYS names the class by its value (`tenant-class=sensitive`), and a class
may list exact taints of its own (`dedicated=regulated:NoSchedule`). Any other taint, however
strict its effect, says nothing about classes: `dedicated=batch:NoSchedule` keeps some pods off
but is not a class pool. Nor is a taint under such a key whose value is no trust class's slug
(`trust-class=externel`, a typo, or `=customers` where no class is so called): the value names
the class, so one naming none puts the node in no class's pool, and K8S-002 says so rather than
a typo hiding the node."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tenants.policy import DEFAULT_TRUST_CLASSES

SEPARATING_EFFECTS = ("NoSchedule", "NoExecute")
DEFAULT_POOL_TAINT_KEYS = ("gpuposture.io/trust-class",)
# GKE, AKS, EKS guides and the GPU Operator put this key on every GPU node and every GPU pod
# tolerates it (GKE adds the toleration itself): a pool "for a class" by this taint admits
# every tenant's GPU pods, so it never names a class, configured or listed.
GENERIC_GPU_TAINT_KEY = "nvidia.com/gpu"
# key=value:effect, or key:effect for a taint with no value (as `kubectl taint` writes them).
# The classes a keyed value may name when the registry was not read (pure callers, tests): the
# seed classes. tenants.selectors.pool_taint_rules passes the registry's slugs.
SEED_CLASSES = frozenset(str(d["slug"]) for d in DEFAULT_TRUST_CLASSES)
_EXACT = re.compile(r"^(?P<key>[^\s=:]+)(?:=(?P<value>[^\s:]*))?:(?P<effect>NoSchedule|NoExecute)$")


def parse_pool_taint(text: str) -> tuple[str, str, str]:
    """(key, value, effect) of an exact pool taint; ValueError when it is not one."""
    found = _EXACT.match(text.strip())
    if not found:
        raise ValueError(f"{text!r}: write a pool taint as key=value:NoSchedule (or :NoExecute)")
    return found["key"], found["value"] or "", found["effect"]


def check_class_taint(text: str) -> None:
    """ValueError when `text` cannot mark a class's pool (the admin refuses it): not a pool
    taint, or the generic GPU taint every GPU pod tolerates. A row saved before this rule is
    still read by parse_pool_taint and simply never matches (PoolTaintRules.classes_of)."""
    key, _value, _effect = parse_pool_taint(text)
    if key == GENERIC_GPU_TAINT_KEY:
        raise ValueError(
            f"{text!r}: every GPU pod tolerates {GENERIC_GPU_TAINT_KEY} taints, so one keeps no "
            "other class off the pool; use a key of your own (gpuposture.io/trust-class=<class>)"
        )


@dataclass(frozen=True)
class PoolTaintRules:
    """The configured keys, each class's exact taints, and the trust classes there are."""

    keys: tuple[str, ...] = DEFAULT_POOL_TAINT_KEYS
    exact: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # class -> taints
    classes: frozenset[str] = SEED_CLASSES  # every trust class's slug

    def classes_of(self, key: str, value: str, effect: str) -> set[str]:
        """The classes one taint marks a pool for (none for an unrelated taint, nor for a
        keyed taint whose value is no class's slug)."""
        if effect not in SEPARATING_EFFECTS or key == GENERIC_GPU_TAINT_KEY:
            return set()
        found = {value} if key in self.keys and value in self.classes else set()
        found |= {
            cls
            for cls, taints in self.exact.items()
            if any(_same(t, key, value, effect) for t in taints)
        }
        return found

    def names_no_class(self, key: str, value: str, effect: str) -> bool:
        """A separating taint under a pool taint key whose value is no trust class (a typo,
        a class never created, no value at all): meant as a class pool, and none."""
        return (
            key in self.keys
            and effect in SEPARATING_EFFECTS
            and key != GENERIC_GPU_TAINT_KEY
            and not self.classes_of(key, value, effect)
        )


def _same(text: str, key: str, value: str, effect: str) -> bool:
    try:
        return parse_pool_taint(text) == (key, value, effect)
    except ValueError:
        return False  # refused when saved; an old row never matches rather than crashing


def pool_classes(taints: Iterable[tuple[str, str, str]], rules: PoolTaintRules) -> list[str]:
    """The classes a node's (key, value, effect) taints mark its pool for, sorted."""
    found: set[str] = set()
    for key, value, effect in taints:
        found |= rules.classes_of(key, value, effect)
    return sorted(found)
