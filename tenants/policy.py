"""Which sharing modes two trust classes may share a physical GPU by (DESIGN §2, §3).

PURE: plain data and functions; no ORM, no network. `tenants` sits below `posture` in the import
layering (STYLE.md), so the functions take any object shaped like posture.inputs.TrustClassInfo
(the TrustClassRules protocol) instead of importing it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from gpuposture.base.enums import SharingMode

# DESIGN §2 `sharing_mode` values, from the strongest isolation to the weakest.
SHARING_MODES: tuple[str, ...] = SharingMode.values()
VGPU_MODES: tuple[str, ...] = tuple(m for m in SHARING_MODES if m.startswith("vgpu_"))

# The five seed classes of DESIGN §3, as plain data (tuples become JSON lists once stored; treat
# as read-only). The seed migration tenants/migrations/0002_default_trust_classes.py keeps its
# own frozen copy of the same values; a test pins them equal.
# Rank orders the classes by the isolation they demand, from platform (0, any mode) to
# sensitive (4): sensitive is strictly highest, so "a sensitive tenant shares with a LOWER
# class" (SHARE-007) means with any other class.
# Image policy (POD-007, DESIGN §2 "images from approved registries, pinned by digest"): every
# tenant class requires a digest, an objective rule; approved_registries stays empty (= any
# registry) because the organisation's registries cannot be guessed: the admin sets them. The
# platform class is not judged by POD-007 (platform pods are not hardened tenant pods).
# The seed migration 0002 froze the classes before this policy; 0008 sets the digest flag.
DEFAULT_TRUST_CLASSES: tuple[dict[str, Any], ...] = (
    {
        "slug": "platform",
        "name": "Platform",
        "description": "The platform team's own system workloads.",
        "allowed_modes": SHARING_MODES,
        "same_class_only_modes": (),
        "requires_dedicated_pool": False,
        "requires_reset_attestation": False,
        "approval_expiry_days": None,
        "approved_registries": (),
        "require_image_digest": False,
        "rank": 0,
    },
    {
        "slug": "internal_trusted",
        "name": "Internal, trusted",
        "description": "Same organisation, reviewed code.",
        "allowed_modes": ("exclusive", "mig_gi", *VGPU_MODES, "mps", "time_slicing"),
        "same_class_only_modes": ("time_slicing",),
        "requires_dedicated_pool": False,
        "requires_reset_attestation": False,
        "approval_expiry_days": None,
        "approved_registries": (),
        "require_image_digest": True,
        "rank": 1,
    },
    {
        "slug": "internal",
        "name": "Internal",
        "description": "Other internal teams.",
        "allowed_modes": ("exclusive", "mig_gi", "vgpu_fixed", "vgpu_equal"),
        "same_class_only_modes": (),
        "requires_dedicated_pool": False,
        "requires_reset_attestation": False,
        "approval_expiry_days": None,
        "approved_registries": (),
        "require_image_digest": True,
        "rank": 2,
    },
    {
        "slug": "external",
        "name": "External",
        "description": "Customers, untrusted or third-party code.",
        "allowed_modes": ("exclusive", "mig_gi"),
        "same_class_only_modes": (),
        "requires_dedicated_pool": True,
        "requires_reset_attestation": False,
        "approval_expiry_days": None,
        "approved_registries": (),
        "require_image_digest": True,
        "rank": 3,
    },
    {
        "slug": "sensitive",
        "name": "Sensitive",
        "description": "Regulated data, crown-jewel models.",
        "allowed_modes": ("exclusive", "mig_gi"),
        "same_class_only_modes": (),
        "requires_dedicated_pool": True,
        "requires_reset_attestation": True,
        "approval_expiry_days": 90,
        "approved_registries": (),
        "require_image_digest": True,
        "rank": 4,
    },
)


class TrustClassRules(Protocol):
    """What the policy reads of a trust class (posture.inputs.TrustClassInfo has it all)."""

    @property
    def slug(self) -> str: ...

    @property
    def allowed_modes(self) -> tuple[str, ...]: ...

    @property
    def same_class_only_modes(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class PolicyDecision:
    allowed: bool
    rule: str  # one sentence naming the rule that allows or forbids
    forbidden_by: tuple[str, ...] = ()  # slugs of the classes whose rule forbids it
    # request_scope only: what an approval of the request covers (REQUEST_SCOPES).
    scope: str = ""


# What an approved sharing request covers (DESIGN §3). `with_other_tenants`: the tenant's class
# allows the mode between tenants, so the approval covers the tenant's pods sharing GPUs with
# its neighbours' too (each neighbour's class is still judged per GPU by SHARE-003).
# `within_tenant`: the class forbids the mode between tenants, and "within one tenant any mode
# is allowed", so the approval covers the tenant's own pods sharing GPUs among themselves only.
WITH_OTHER_TENANTS = "with_other_tenants"
WITHIN_TENANT = "within_tenant"
REQUEST_SCOPES: tuple[str, ...] = (WITH_OTHER_TENANTS, WITHIN_TENANT)

# How a rule's sentence names a mode or a class: by its code (the API, findings, the audit
# log), or a page passes gpuposture.base.labels.words so the same sentence reads as words.
Say = Callable[[str], str]


def _code(code: str) -> str:
    return code


def _modes(modes: tuple[str, ...], say: Say) -> str:
    names = [say(m) for m in modes]
    # A mode in words may hold a comma ("vGPU, fixed share"): then the list is split by ";".
    return ("; " if any("," in n for n in names) else ", ").join(names) or "no sharing mode"


def _class_objection(
    own: TrustClassRules, peer: TrustClassRules, mode: str, say: Say = _code
) -> str | None:
    """Why `own`'s rules forbid sharing with `peer` by `mode`, or None if they allow it."""
    if mode not in own.allowed_modes:
        allowed = _modes(own.allowed_modes, say)
        return f"trust class '{say(own.slug)}' allows only {allowed} (not {say(mode)})"
    if mode in own.same_class_only_modes and peer.slug != own.slug:
        return (
            f"trust class '{say(own.slug)}' allows {say(mode)} only with other "
            f"'{say(own.slug)}' tenants, not with '{say(peer.slug)}'"
        )
    return None


def may_share(
    a: TrustClassRules,
    b: TrustClassRules,
    mode: str,
    same_tenant: bool = False,
    say: Say = _code,
) -> PolicyDecision:
    """May workloads of classes `a` and `b` share one physical GPU by `mode`?

    Both classes must allow the mode (DESIGN §3); within one tenant any mode is allowed.
    An unknown mode is refused rather than guessed at: this decides isolation.
    """
    if mode not in SHARING_MODES:
        return PolicyDecision(False, f"'{mode}' is not a known sharing mode", (a.slug, b.slug))
    if same_tenant:
        return PolicyDecision(True, "within one tenant any sharing mode is allowed")
    objections: list[tuple[str, str]] = []
    for own, peer in ((a, b), (b, a)):
        reason = _class_objection(own, peer, mode, say)
        if reason and own.slug not in {slug for slug, _ in objections}:
            objections.append((own.slug, reason))
    if objections:
        rule = "; ".join(reason for _, reason in objections)
        return PolicyDecision(False, rule, tuple(slug for slug, _ in objections))
    if a.slug == b.slug:
        return PolicyDecision(True, f"trust class '{say(a.slug)}' allows {say(mode)}")
    return PolicyDecision(
        True, f"trust classes '{say(a.slug)}' and '{say(b.slug)}' both allow {say(mode)}"
    )


def mode_permitted(cls: TrustClassRules, mode: str, say: Say = _code) -> PolicyDecision:
    """May a tenant of class `cls` share its GPUs with other tenants by `mode` at all?

    Whether a particular neighbour's class allows it too is judged per GPU by SHARE-003.
    exclusive is always permitted: it shares nothing. A sharing request for a mode refused
    here is still accepted, for the tenant's own pods only (request_scope).
    """
    if mode not in SHARING_MODES:
        known = ", ".join(SHARING_MODES)
        return PolicyDecision(False, f"'{mode}' is not a known sharing mode ({known})", (cls.slug,))
    if mode == "exclusive":
        return PolicyDecision(True, "exclusive use of a GPU shares nothing")
    objection = _class_objection(cls, cls, mode, say)
    if objection:
        return PolicyDecision(False, objection, (cls.slug,))
    name = say(cls.slug)
    if mode in cls.same_class_only_modes:
        return PolicyDecision(
            True, f"trust class '{name}' allows {say(mode)}, only with other '{name}' tenants"
        )
    return PolicyDecision(True, f"trust class '{name}' allows {say(mode)}")


def request_scope(cls: TrustClassRules, mode: str, say: Say = _code) -> PolicyDecision:
    """What an approved sharing request of a tenant of class `cls` for `mode` covers.

    Within one tenant any mode is allowed (DESIGN §3), so a request for any known mode is
    accepted: `with_other_tenants` where the class allows the mode between tenants, else
    `within_tenant`, the tenant's own pods only. An approval never makes co-tenancy allowed:
    SHARE-001/003/006/007 judge every GPU two tenants share, whatever was approved. An unknown
    mode is refused. Judged against the tenant's CURRENT class: a tenant moved to a stricter
    class keeps its approvals, narrowed to its own pods.
    """
    between = mode_permitted(cls, mode, say)
    if between.allowed:
        return replace(between, scope=WITH_OTHER_TENANTS)
    if mode not in SHARING_MODES:
        return between
    allowed = _modes(cls.allowed_modes, say)
    return PolicyDecision(
        True,
        f"for this tenant's own pods only: trust class '{say(cls.slug)}' forbids sharing by "
        f"{say(mode)} with other tenants (it allows only {allowed}); SHARE-003 still reports any "
        "co-tenancy",
        scope=WITHIN_TENANT,
    )


# --- which mode pods on a node share a physical GPU by ---------------------------------------

SHARED_SUFFIX = ".shared"  # added by the device plugin's renameByDefault
# A MIG profile whose compute slices differ from its GPU-instance slices ("1c.3g.40gb") is a
# compute instance inside a shared GPU instance; "3g.40gb" (or "3g.40gb+me") is a whole GI.
_MIG_CI = re.compile(r"^nvidia\.com/mig-\d+c\.\d+g\.")
# Fractional schedulers (HAMi, Volcano's vGPU device plugin, Aliyun's gpushare / cGPU,
# Koordinator's GPU share, Tencent's qGPU) count as time-slicing for isolation (DESIGN §2):
# soft limits, or none. These are their memory and core counters, never a count of GPUs
# (Aliyun's `gpu-mem` is GiB of one GPU's memory, Koordinator's `gpu-core` percent of one).
FRACTIONAL_RESOURCES = frozenset(
    {
        "nvidia.com/gpumem",
        "nvidia.com/gpumem-percentage",
        "nvidia.com/gpucores",
        "volcano.sh/vgpu-memory",
        "volcano.sh/vgpu-cores",
        "aliyun.com/gpu-mem",
        "aliyun.com/gpu-core.percentage",
        "koordinator.sh/gpu",
        "koordinator.sh/gpu-core",
        "koordinator.sh/gpu-memory-ratio",
        "koordinator.sh/gpu-memory",
        "tke.cloud.tencent.com/qgpu-core",
        "tke.cloud.tencent.com/qgpu-memory",
    }
)
VGPU_SCHEDULERS = {"fixed": "vgpu_fixed", "equal": "vgpu_equal", "best_effort": "vgpu_best_effort"}


def base_resource(resource_name: str) -> str:
    """The resource without the device plugin's ".shared" rename: the same physical pool."""
    if resource_name.endswith(SHARED_SUFFIX):
        return resource_name[: -len(SHARED_SUFFIX)]
    return resource_name


def is_mig_resource(resource_name: str) -> bool:
    return base_resource(resource_name).startswith("nvidia.com/mig-")


def _mig_mode(resource_name: str) -> str:
    return "mig_ci" if _MIG_CI.match(base_resource(resource_name)) else "mig_gi"


def node_sharing_mode(
    node_sharing_strategy: str,
    resource_name: str,
    *,
    mig_strategy: str | None = None,
    vgpu_scheduler: str | None = None,
) -> str:
    """The DESIGN §2 mode by which pods holding `resource_name` on a node share a physical GPU.

    Time-slicing wins over MIG: the device plugin can time-slice MIG devices, and then several
    pods share one MIG device with no isolation. MPS is never applied to MIG devices (the device
    plugin does not support it), so a MIG resource on an MPS node is still a whole instance.
    A vGPU node whose scheduler is unknown is assumed best effort, NVIDIA's default.
    """
    if resource_name in FRACTIONAL_RESOURCES:
        return "time_slicing"
    if node_sharing_strategy in ("time_slicing", "unknown"):
        # "unknown": the device-plugin config could not be read; it may time-slice, and
        # nothing unknown is judged better than the weakest isolation it could give.
        return "time_slicing"
    if node_sharing_strategy == "mps":
        return _mig_mode(resource_name) if is_mig_resource(resource_name) else "mps"
    if node_sharing_strategy == "vgpu":
        return VGPU_SCHEDULERS.get(vgpu_scheduler or "", "vgpu_best_effort")
    if node_sharing_strategy not in ("none", "mig"):
        raise ValueError(f"unknown node sharing strategy {node_sharing_strategy!r}")
    if is_mig_resource(resource_name):
        return _mig_mode(resource_name)
    if resource_name.endswith(SHARED_SUFFIX):
        # Only a sharing config renames a resource: the node label is missing or stale.
        # Assume the weakest of the two renaming modes rather than exclusive.
        return "time_slicing"
    if node_sharing_strategy == "mig" and mig_strategy != "mixed":
        # Single strategy advertises each MIG GPU instance as nvidia.com/gpu.
        return "mig_gi"
    return "exclusive"
