"""K8S-007's title (moved out of egress.py). A title naming policies longer than a finding
stores (TITLE_MAX: a Cilium rule of a 253-character policy is "name specs[i]") counts them
instead ("1 CNI policy named in the evidence"): the evidence names each whole, nothing is cut."""

from __future__ import annotations

from dataclasses import dataclass, field

from posture.rules.k8s.cni_enforcement import NOT_ENFORCED, Enforcement
from posture.rules.k8s.egress_mesh import MESH_RESTRICTED
from posture.rules.registry import MEMBERS_SHOWN, TITLE_MAX

NO_K8S = " (no Kubernetes NetworkPolicy restricts it)"


@dataclass(frozen=True)
class TitleFacts:
    namespace: str
    tenant: str
    open_pods: int
    gpu_pods: int
    enforced: Enforcement
    verdict: str
    has_policies: bool  # NetworkPolicies in the namespace
    opened_by: list[str] = field(default_factory=list)  # CNI policies opening the internet
    allowing: list[str] = field(default_factory=list)  # NetworkPolicies allowing all egress
    preceded: dict[str, str] = field(default_factory=dict)  # Calico policies not evaluated: why
    unread_kinds: list[str] = field(default_factory=list)  # kinds of CNI policies not evaluated
    cnis: list[str] = field(default_factory=list)  # CNIs whose policies were not read
    refused: list[str] = field(default_factory=list)  # CNI policy kinds the sync could not list
    restricted: int = 0  # GPU pods restricted as read, which a kind not listed may open


def k8s007_title(facts: TitleFacts) -> str:
    """The title naming the policies; counting them where named it would not fit."""
    title = _title(facts, short=False)
    return title if len(title) <= TITLE_MAX else _title(facts, short=True)


def _named(refs: list[str], what: str, short: bool) -> str:
    if not short:
        return ", ".join(refs)
    plural = f"{what[:-1]}ies" if what.lower().endswith("policy") else f"{what}s"
    return f"{len(refs)} {what if len(refs) == 1 else plural} named in the evidence"


def _title(facts: TitleFacts, short: bool) -> str:
    where = f"Namespace {facts.namespace} of tenant {facts.tenant}"
    pods = f"{facts.open_pods + facts.restricted} of {facts.gpu_pods} GPU pod(s)"
    enforced = facts.enforced.state != NOT_ENFORCED
    title = f"{where}: {pods} with no NetworkPolicy restricting egress"
    unknown = bool(facts.unread_kinds or facts.cnis or facts.refused)
    if not enforced and facts.has_policies and not unknown:
        title = (
            f"{where}: egress of {pods} not restricted: the cluster's CNI "
            f"({facts.enforced.cni}) does not enforce NetworkPolicy"
        )
    elif facts.opened_by and not unknown:
        title = (
            f"{where}: {pods} allowed egress to the internet by "
            f"{_named(facts.opened_by, 'CNI policy', short)}, whatever a NetworkPolicy restricts"
        )
    # A NetworkPolicy whose egress rule allows everything (`egress: [{}]`) selecting these
    # pods undoes any deny: the title names it, as the evidence's `allows_all_egress` does.
    allowing = _named(facts.allowing[:MEMBERS_SHOWN], "NetworkPolicy", short)
    if facts.allowing and enforced and not facts.opened_by:
        by = f"NetworkPolicy {allowing}" if not short else allowing
        title = f"{where}: {pods} allowed all egress by {by}"
    cannot_tell = f"{where}: cannot tell whether egress of {pods} is restricted"
    if facts.allowing and enforced:
        # Only another engine's policy (Calico's order, a Cilium deny) could still restrict
        # them: say what allows all first, then what is unknown.
        by = f"NetworkPolicy {allowing}" if not short else allowing
        cannot_tell = (
            f"{where}: {by} allows all egress of {pods}; whether another policy restricts it "
            "cannot be told"
        )
    # Said of the pods only where no NetworkPolicy allowing all is named before it.
    no_k8s = "" if (facts.allowing and enforced) or facts.restricted else NO_K8S
    if facts.refused:
        # First: the sync's own gap, which the account's grant closes (the evidence says how).
        kinds = _named(facts.refused, "CNI policy kind", short)
        title = (
            f"{cannot_tell}: the sync was refused listing {kinds}, whose policies may allow or "
            f"deny it{no_k8s}"
        )
    elif facts.preceded:
        names = _named(sorted(facts.preceded)[:MEMBERS_SHOWN], "Calico policy", short)
        why = "; ".join(sorted(set(facts.preceded.values()))) if not short else "why: evidence"
        title = (
            f"{cannot_tell}: {'Calico policy ' if not short else ''}{names} may apply to them, "
            f"which gpuposture cannot evaluate ({why})"
        )
    elif facts.unread_kinds:
        kinds = ", ".join(facts.unread_kinds)
        title = f"{cannot_tell}: {kinds} present, which gpuposture does not evaluate{no_k8s}"
    elif facts.cnis:
        title = (
            f"{cannot_tell}: the cluster runs {', '.join(facts.cnis)}, whose own network "
            f"policies were not read{no_k8s}"
        )
    if facts.verdict == MESH_RESTRICTED:
        title = (
            f"{where}: egress of {pods} limited only by Istio's mesh-wide REGISTRY_ONLY (no "
            "NetworkPolicy restricts it; a container can go around the sidecar)"
        )
    return title
