"""The enumerations many modules share: finding severity and status, sharing mode, check scope.

PURE: standard-library enums, no Django, so the pure cores (rules, scoring, policy) use them as
well as models, forms and filters (gpuposture.base.choices makes a model's TextChoices from
one). Members are `str`: each equals, hashes and formats as its value, so the database, the API
and the exports keep the same strings. The order members are declared in is a rank.
"""

from __future__ import annotations

from enum import StrEnum


class Codes(StrEnum):
    """A StrEnum whose values() are plain strings in declaration order."""

    @classmethod
    def values(cls) -> tuple[str, ...]:
        # Plain str, not members: yaml.safe_dump and other exact-type encoders refuse subclasses.
        return tuple(member.value for member in cls)

    @classmethod
    def rank(cls, value: str) -> int:
        """Position of `value` in declaration order; an unknown value ranks after every member."""
        values = cls.values()
        return values.index(value) if value in values else len(values)


class Severity(Codes):
    """A finding's severity, the worst first."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class FindingStatus(Codes):
    """Where a finding stands: open, resolved (its cause is gone) or accepted (a risk owned)."""

    OPEN = "open"
    RESOLVED = "resolved"
    ACCEPTED = "accepted"


class SharingMode(Codes):
    """DESIGN §2 `sharing_mode`: how tenants share a physical GPU, strongest isolation first."""

    EXCLUSIVE = "exclusive"
    MIG_GI = "mig_gi"
    MIG_CI = "mig_ci"
    VGPU_FIXED = "vgpu_fixed"
    VGPU_EQUAL = "vgpu_equal"
    VGPU_BEST_EFFORT = "vgpu_best_effort"
    MPS = "mps"
    TIME_SLICING = "time_slicing"


class CheckScope(Codes):
    """What a check's findings are about, and so whom they affect."""

    TENANT = "tenant"
    NODE = "node"
    GPU = "gpu"
    CLUSTER = "cluster"
    PROVIDER = "provider"
