"""Who a DCGM-Exporter sample belongs to, and how sure we can be (ATTR-002). PURE.

The exporter labels a GPU's series with the namespace and pod it is mapped to. A namespace a
tenant owns makes the sample the tenant's; a platform namespace (kube-system, the GPU Operator's,
the configured and labelled ones: tenants.mapping.platform_namespaces) the platform's; any other
namespace is nobody's, so the system tenant `unclassified`'s (DESIGN §3: nothing unknown is
judged, or charged, as the platform's); no namespace label leaves it unattributed. Confidence
says whether the per-workload figure is real: on a time-sliced or MPS node the exporter either
drops the pod labels or copies one GPU-wide value onto every pod, so it never is there.

A KAI Scheduler fraction's GPU is held, for the kubelet, by KAI's reservation pod, so the exporter
names that placeholder: the reading is the GPU-wide usage of the fraction pods bound to it, so it
is copied onto each of them (as the exporter does on a time-sliced GPU) at confidence "shared";
with none known, nobody can be said to use it ("unattributed", confidence "none").

A pod label is checked against the last sync where the sample comes from one of its nodes.
DCGM-Exporter names only pods of its own node (the kubelet's pod resources), so a label naming a
pod the sync binds to another node is stale, mislabelled or forged: the sample is nobody's
("unattributed", as one with no namespace label), never the named pod's tenant's, or anyone who
can write labels would shift cost onto another tenant (ATTR-001 says the GPU is held by no pod,
its `labels_named` where that pod runs). A label naming a pod the sync does not list at all, or
lists with no node (created or placed since, or wrongly named), is booked as it says, at "none":
the usage may well be real (a job created and gone between two syncs), but nothing verified it
(ATTR-002)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from telemetry.samples import GpuSample
from tenants.mapping import UNCLASSIFIED

ATTRIBUTIONS = ("tenant", "platform", "unattributed")
# Worst first: worst_confidence() and the usage rows rely on this order.
CONFIDENCES = ("none", "shared", "exact")


@dataclass(frozen=True)
class FractionPod:
    """A KAI fraction pod bound to the GPU a reservation pod holds: who uses that GPU."""

    namespace: str
    pod: str
    container: str  # the container KAI hands the GPU to (Pod.fraction_container)


# (namespace, pod) of a reservation pod -> the fraction pods bound to the GPU it holds
Reservations = Mapping[tuple[str, str], tuple[FractionPod, ...]]
# (hostname, namespace, pod) of a sample whose pod label the last sync contradicts or lacks
LabelKey = tuple[str, str, str]


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
    reservations: Reservations | None = None,
    elsewhere: Collection[LabelKey] = (),
    unlisted: Collection[LabelKey] = (),
) -> list[Attributed]:
    """Each sample with its owner and confidence, in the order given (a reservation pod's
    sample as one copy per fraction pod bound to its GPU).

    `owners` maps namespace -> tenant slug; `shared_nodes` are the hostnames whose GPUs are
    time-sliced or MPS-shared; `platform` the cluster's platform namespaces; `reservations`
    the KAI reservation pods and the fraction pods bound to the GPU each holds. `elsewhere`
    and `unlisted` are the (hostname, namespace, pod) of samples from an inventory node whose
    pod label names a pod the last inventory binds to another node, or does not list at all
    (telemetry.ingest_context.label_checks): the former booked to nobody, the latter as the
    label says at confidence "none" (the module's docstring says why)."""
    shared = frozenset(shared_nodes)  # callers may pass a list; looked up once per sample
    ours = frozenset(platform)
    reservations = reservations or {}
    found: list[Attributed] = []
    for s in samples:
        key = (s.hostname, s.namespace, s.pod)
        if s.pod and key in elsewhere:
            # The label is contradicted: it names no owner, so the usage is nobody's.
            found.append(Attributed(s, None, "unattributed", "none"))
            continue
        fractions = reservations.get((s.namespace, s.pod)) if s.pod else None
        if fractions is None:
            one = _attribute_one(s, owners, shared, ours)
            if s.pod and key in unlisted:
                one = replace(one, confidence="none")  # unverified, never "exact"
            found.append(one)
        elif not fractions:
            # The placeholder does not use the GPU, and no fraction bound to it is known.
            found.append(Attributed(s, None, "unattributed", "none"))
        else:
            found += [_fraction_share(s, f, owners, shared, ours) for f in fractions]
    return found


def _fraction_share(
    s: GpuSample,
    fraction: FractionPod,
    owners: Mapping[str, str],
    shared: frozenset[str],
    platform: frozenset[str],
) -> Attributed:
    """The GPU-wide reading as one fraction pod's share: never exact, the exporter cannot tell
    the fractions' use apart (ATTR-002)."""
    share = replace(s, namespace=fraction.namespace, pod=fraction.pod, container=fraction.container)
    found = _attribute_one(share, owners, shared, platform)
    return replace(found, confidence="shared") if found.confidence == "exact" else found


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
