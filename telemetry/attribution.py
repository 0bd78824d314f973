"""Who a DCGM-Exporter sample belongs to, and how sure we can be (ATTR-002). PURE.

The exporter labels a GPU's series with the namespace and pod it is mapped to. A namespace a
tenant owns makes the sample the tenant's; a platform namespace (kube-system, the GPU Operator's,
the configured and labelled ones: tenants.mapping.platform_namespaces) the platform's; any other
namespace is nobody's, so the system tenant `unclassified`'s (DESIGN §3: nothing unknown is
judged, or charged, as the platform's); no namespace label leaves it unattributed. Confidence
says whether the per-workload figure is real: on a time-sliced or MPS node the exporter either
drops the pod labels or copies one GPU-wide value onto every pod, so it never is there."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from telemetry.samples import GpuSample
from tenants.mapping import UNCLASSIFIED

ATTRIBUTIONS = ("tenant", "platform", "unattributed")
# Worst first: worst_confidence() and the usage rows rely on this order.
CONFIDENCES = ("none", "shared", "exact")


@dataclass(frozen=True)
class Attributed:
    sample: GpuSample
    tenant: str | None  # the tenant's slug when attribution == "tenant", else None
    attribution: str  # one of ATTRIBUTIONS
    confidence: str  # one of CONFIDENCES


def attribute(
    samples: Iterable[GpuSample],
    *,
    owners: Mapping[str, str],
    shared_nodes: Collection[str],
    platform: Collection[str],
) -> list[Attributed]:
    """Each sample with its owner and confidence, in the order given.

    `owners` maps namespace -> tenant slug; `shared_nodes` are the hostnames whose GPUs are
    time-sliced or MPS-shared; `platform` the cluster's platform namespaces."""
    shared = frozenset(shared_nodes)  # callers may pass a list; looked up once per sample
    ours = frozenset(platform)
    return [_attribute_one(s, owners, shared, ours) for s in samples]


def _attribute_one(
    s: GpuSample, owners: Mapping[str, str], shared: frozenset[str], platform: frozenset[str]
) -> Attributed:
    if not s.namespace:
        # Nothing to attribute, so no confidence in any owner, even if a pod label survived.
        return Attributed(s, None, "unattributed", "none")
    tenant = owners.get(s.namespace)
    if tenant is None and s.namespace in platform:
        return Attributed(s, None, "platform", _confidence(s, shared))
    # A tenant's namespace (a claim wins over any platform list), or one nobody claims: the
    # unclassified party's, charged and judged as a tenant, never as the platform.
    return Attributed(s, tenant or UNCLASSIFIED, "tenant", _confidence(s, shared))


def _confidence(s: GpuSample, shared: frozenset[str]) -> str:
    if not s.pod:
        return "none"
    if s.hostname in shared:
        # Labels present but the value is GPU-wide, copied onto each pod (ATTR-002).
        return "shared"
    return "exact"


def worst_confidence(values: Iterable[str]) -> str:
    """The least certain of the given confidences (none < shared < exact).

    Nothing given gives "none": an empty figure claims no precision."""
    ranks = [CONFIDENCES.index(v) for v in values]  # an unknown value raises ValueError
    return CONFIDENCES[min(ranks)] if ranks else "none"
