"""K8S-007: tenant GPU namespaces with no egress NetworkPolicy."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from inventory.label_selector import selector_matches
from inventory.snapshot import NetworkPolicy, Pod, Workload
from inventory.sources.cni_policies import NAMESPACE_LABEL, RESTRICT_ONLY_KINDS
from inventory.sources.egress_ports import denied_note, merge, note
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import pod_ref, tenant_pods
from posture.rules.dra_holdings import uses_accelerator
from posture.rules.k8s.cni_enforcement import NOT_ENFORCED, UNVERIFIED, Enforcement, enforcement
from posture.rules.k8s.egress_calico import OPEN, UNKNOWN, calico_egress, is_calico
from posture.rules.k8s.egress_evidence import host_network, port_limits, selector_of
from posture.rules.k8s.egress_mesh import MESH_NOTE, MESH_RESTRICTED, behind_sidecar, registry_only
from posture.rules.k8s.egress_titles import TitleFacts, k8s007_title
from posture.rules.k8s.egress_unread import (
    grants,
    names_only,
    policy_ref,
    refused_kinds,
    unread_policies,
)
from posture.rules.registry import MEMBERS_SHOWN, FindingDraft, check
from posture.rules.subjects import namespace_draft


def selects_for_egress(policy: NetworkPolicy, pod: Pod) -> bool:
    """True when the policy is an egress policy of the pod's namespace whose podSelector
    (matchLabels and matchExpressions) picks the pod."""
    if "Egress" not in policy.policy_types or policy.namespace != pod.namespace:
        return False
    return selector_matches(policy.pod_selector, policy.match_expressions, pod.labels)


def cilium_denies_world(policies: Iterable[NetworkPolicy], pod: Pod) -> bool:
    """A Cilium policy denies the pod egress to the world (its deny wins over every allow,
    Kubernetes NetworkPolicies included). A hostNetwork pod is no Cilium endpoint of its own."""
    if pod.host_network:
        return False
    labels = {**pod.labels, NAMESPACE_LABEL: pod.namespace}
    return any(
        p.egress_denies_world
        and p.namespace in ("", pod.namespace)
        and selector_matches(p.pod_selector, p.match_expressions, labels)
        for p in policies
    )


def cni_opens_world(policies: Iterable[NetworkPolicy], pod: Pod) -> list[NetworkPolicy]:
    """The Cilium and AdminNetworkPolicy rules opening egress to the internet for the pod,
    which no NetworkPolicy of its namespace takes back: a Cilium allow adds to a
    NetworkPolicy's, an AdminNetworkPolicy Allow is final before it. Calico's are evaluated
    in Calico's order (egress_calico.py)."""
    if pod.host_network:
        return []
    labels = {**pod.labels, NAMESPACE_LABEL: pod.namespace}
    return [
        p
        for p in policies
        if p.engine
        and not is_calico(p)
        and p.egress_allows_all
        and p.namespace in ("", pod.namespace)
        and selector_matches(p.pod_selector, p.match_expressions, labels)
    ]


def restricts_egress(
    policies: Iterable[NetworkPolicy], pod: Pod, cni: Iterable[NetworkPolicy] = ()
) -> bool:
    """True when some egress policy selects the pod (a NetworkPolicy, or a Cilium rule
    limiting egress to an allow-list: cilium_restricts) and no NetworkPolicy selecting it opens
    egress everywhere: policies add up, so one allow-all rule undoes a deny-all.
    A hostNetwork pod is never restricted: it sends from the node's own network namespace,
    where Kubernetes leaves NetworkPolicy undefined and the common CNIs do not enforce it."""
    if pod.host_network:
        return False
    selecting = [p for p in policies if selects_for_egress(p, pod)]
    if any(p.egress_allows_all for p in selecting):
        return False
    return bool(selecting) or any(cilium_restricts(p, pod) for p in cni)


def cilium_port_denies(policies: Iterable[NetworkPolicy], pod: Pod) -> list[NetworkPolicy]:
    """The Cilium policies denying the pod egress to the world on some ports only
    (egress_denied_ports): the ports they take away from whatever allows it."""
    if pod.host_network:
        return []
    labels = {**pod.labels, NAMESPACE_LABEL: pod.namespace}
    return [
        p
        for p in policies
        if p.engine.startswith("cilium.io/")
        and p.egress_denied_ports
        and p.namespace in ("", pod.namespace)
        and selector_matches(p.pod_selector, p.match_expressions, labels)
    ]


def cilium_restricts(policy: NetworkPolicy, pod: Pod) -> bool:
    """The Cilium policy limits the pod's egress to an allow-list (names, the cluster, narrow
    CIDRs): Cilium's default deny for egress but those peers."""
    labels = {**pod.labels, NAMESPACE_LABEL: pod.namespace}
    return (
        names_only(policy)
        and policy.namespace in ("", pod.namespace)
        and selector_matches(policy.pod_selector, policy.match_expressions, labels)
    )


@check(
    id="K8S-007",
    needs=("ResourceClaim",),
    title="Tenant namespace with GPU workloads and no egress NetworkPolicy",
    severity="medium",
    scope="tenant",
    rationale=(
        "Without an egress policy a GPU pod can reach the internet and every service in the "
        "cluster: a compromised notebook or job can download miners, exfiltrate models and "
        "datasets, or call the cloud metadata endpoint for node credentials. GPU pods are the "
        "most valuable to hijack and the most likely to run third-party code, whatever the "
        "vendor: a pod holding `amd.com/gpu`, `habana.ai/gaudi` or `gpu.intel.com/xe` is a GPU "
        "pod here as much as one holding `nvidia.com/gpu`."
    ),
    remediation=(
        "Add a NetworkPolicy in the namespace with `policyTypes: [Egress]` and a `podSelector` "
        "that covers the GPU pods (`{}` for all), allowing only what they need: cluster DNS, "
        "the namespace itself, and named registries or storage endpoints. An egress rule `{}` "
        "(or `to` 0.0.0.0/0 on every port) in any policy selecting the pods allows everything "
        "and undoes the deny: narrow it, and so does a Cilium or Calico policy allowing the "
        "pods egress to the world, or an AdminNetworkPolicy `Allow` to 0.0.0.0/0. Check that "
        "the cluster's CNI enforces NetworkPolicy: flannel alone, the AWS VPC CNI without both "
        "its network policy agent (`--enable-network-policy=true`) and controller "
        "(`enable-network-policy-controller` in the amazon-vpc-cni ConfigMap) enabled, "
        "kindnet before kind v0.24, GKE without Dataplane V2 "
        "or network policy enforcement, and AKS without a network policy engine do not. "
        "Where the finding says the sync was refused listing a CNI's policy kinds, grant "
        "gpuposture's account get/list/watch on them (deploy/rbac.yaml) and sync again."
    ),
    mappings=("SP800-53:SC-7",),
)
def gpu_namespace_without_egress_policy(inputs: PostureInputs) -> Iterator[FindingDraft]:
    gpu_pods: dict[str, list[Pod]] = {}
    owners: dict[str, TenantInfo] = {}
    for pod, tenant in tenant_pods(inputs):
        if uses_accelerator(inputs, pod):
            gpu_pods.setdefault(pod.namespace, []).append(pod)
            owners[pod.namespace] = tenant
    own = [p for p in inputs.snapshot.network_policies if not p.engine]
    cni = [p for p in inputs.snapshot.network_policies if p.engine]
    unlisted = unlisted_cnis(inputs.snapshot.workloads, cni)
    enforced = enforcement(inputs.snapshot.workloads, inputs.snapshot.configmaps)
    mesh = registry_only(inputs.snapshot.configmaps)
    namespace_labels = {n.name: n.labels for n in inputs.snapshot.namespaces}
    # CNI policy kinds the sync was refused listing: what their objects allow or deny is not
    # known, so no pod reads as restricted nor as open (no engine acts where none enforces).
    refused = refused_kinds(inputs.kinds_unread) if enforced.state != NOT_ENFORCED else []
    may_open = any(k not in RESTRICT_ONLY_KINDS for k in refused)  # a pod restricted as read
    for namespace, pods in sorted(gpu_pods.items()):
        policies = sorted((p for p in own if p.namespace == namespace), key=lambda p: p.name)
        open_pods: list[Pod] = []
        unsure: list[Pod] = []  # restricted as read, but a policy not listed may open them
        opened_by: dict[str, NetworkPolicy] = {}
        calico_unknown: dict[str, str] = {}  # Calico policies that cannot be evaluated: why
        ported: dict[str, str] = {}  # CNI policies limiting the internet to ports: which
        denied: dict[str, str] = {}  # Cilium policies denying the internet on ports: which
        for pod in pods:
            # Where the CNI is known not to enforce, no Cilium agent runs: its policies are inert.
            if enforced.state != NOT_ENFORCED and cilium_denies_world(cni, pod):
                continue
            denies = cilium_port_denies(cni, pod) if enforced.state != NOT_ENFORCED else []
            denied_ports = merge(*(p.egress_denied_ports for p in denies))
            opening = cni_opens_world(cni, pod)
            calico = None
            if enforced.state != NOT_ENFORCED:
                selecting = [p for p in policies if selects_for_egress(p, pod)]
                calico = calico_egress(cni, selecting, pod, namespace_labels.get(namespace))
            if opening:
                opened_by.update({policy_ref(p): p for p in opening})
            elif calico is not None and calico.state == OPEN:
                if calico.policy is not None and is_calico(calico.policy):
                    opened_by[policy_ref(calico.policy)] = calico.policy
            elif calico is not None and calico.state == UNKNOWN:
                ref = policy_ref(calico.policy) if calico.policy else "Calico"
                calico_unknown[ref] = calico.why
            elif calico is not None or (
                enforced.state != NOT_ENFORCED and restricts_egress(policies, pod, cni)
            ):
                # Restricted: by Calico (open and unknown are above), or else; where a CNI
                # policy lets it reach the internet on some ports, the evidence says which.
                chosen = [p for p in cni if cilium_restricts(p, pod)]
                ported.update(
                    port_limits(
                        [*chosen, calico.policy if calico else None], policy_ref, denied_ports
                    )
                )
                if may_open:  # a Calico policy in an earlier tier, an ANP or Cilium allow
                    unsure.append(pod)
                continue
            open_pods.append(pod)
            denied.update({policy_ref(p): denied_note(p.egress_denied_ports) for p in denies})
        if open_pods or unsure:
            # A CNI's own policy here or cluster-wide may restrict them: unknown, not "none";
            # where the CNI is known not to enforce, no engine runs to act on any of them.
            unread = (
                unread_policies(cni, namespace, open_pods, set(opened_by))
                if enforced.state != NOT_ENFORCED
                else []
            )
            draft = _egress_draft(
                inputs,
                namespace,
                owners[namespace],
                (open_pods, len(pods)),
                policies,
                (unread, unlisted, (refused, unsure)),
                (enforced, sorted(opened_by), calico_unknown),
                (mesh, [p for p in open_pods if mesh and behind_sidecar(p)]),
            )
            if denied:
                draft.evidence["cni_policies_denying_internet_on_ports"] = [
                    {"policy": ref, "internet": why} for ref, why in sorted(denied.items())
                ][:MEMBERS_SHOWN]
            if ported:
                draft.evidence["cni_policies_limiting_internet_to_ports"] = [
                    {"policy": ref, "internet": why} for ref, why in sorted(ported.items())
                ][:MEMBERS_SHOWN]
            yield draft


# A CNI with a network-policy API of its own: the image of its node agent, and its API groups.
CNI_AGENTS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("Cilium", ("cilium/cilium",), ("cilium.io",)),
    ("Calico", ("calico/node", "calico-node"), ("projectcalico.org", "crd.projectcalico.org")),
    ("Antrea", ("antrea/antrea", "antrea-agent"), ("crd.antrea.io",)),
    # OpenShift's ovnkube-node runs the release's ovn-kubernetes image; upstream names it so.
    ("OVN-Kubernetes", ("ovn-kubernetes", "ovnkube"), ("k8s.ovn.org",)),
)


def unlisted_cnis(workloads: Iterable[Workload], cni_policies: list[NetworkPolicy]) -> list[str]:
    """CNIs whose agent DaemonSet runs but none of whose own policies were read: a live sync
    does not list their kinds (nor does a snapshot that left them out), so whether they
    restrict egress cannot be told. A snapshot holding some of their policies listed them."""
    groups = {p.engine.partition("/")[0] for p in cni_policies}
    images = [
        image.lower() for w in workloads if w.kind == "DaemonSet" for image in w.images.values()
    ]
    return [
        name
        for name, markers, api_groups in CNI_AGENTS
        if any(m in image for m in markers for image in images) and not groups & set(api_groups)
    ]


def _egress_draft(
    inputs: PostureInputs,
    namespace: str,
    tenant: TenantInfo,
    pods: tuple[list[Pod], int],
    policies: list[NetworkPolicy],
    unknowns: tuple[list[NetworkPolicy], list[str], tuple[list[str], list[Pod]]],
    known: tuple[Enforcement, list[str], dict[str, str]],
    meshed: tuple[list[str], list[Pod]] = ([], []),
) -> FindingDraft:
    (open_pods, gpu_pod_count), (unread, cnis, (refused, unsure)), known_ = pods, unknowns, known
    enforced, opened_by, preceded = known_
    evidence = {
        "namespace": namespace,
        "tenant": tenant.slug,
        "verdict": "unknown" if unread or cnis or preceded or refused else "not restricted",
        "network_policy_enforcement": _enforcement(enforced),
        "gpu_pods_without_egress_policy": [pod_ref(p) for p in open_pods[:MEMBERS_SHOWN]],
        "open_gpu_pods": len(open_pods),
        "gpu_pods": gpu_pod_count,
        **host_network(open_pods),
        "network_policies": [
            {
                "name": p.name,
                "policy_types": list(p.policy_types),
                "pod_selector": "all pods" if p.selects_all_pods else selector_of(p),
                "allows_all_egress": p.egress_allows_all,
                **({"internet": note(p.internet_ports)} if p.internet_ports else {}),
            }
            for p in policies
        ],
    }

    if opened_by:
        evidence["cni_policies_allowing_internet"] = opened_by[:MEMBERS_SHOWN]
    if unread:
        evidence["unevaluated_policies"] = [policy_ref(p) for p in unread[:MEMBERS_SHOWN]]
    if cnis:
        evidence["cni_policies_not_read"] = cnis
    if refused:
        evidence["cni_policy_kinds_not_listed"] = grants(refused)
    if unsure:
        evidence["gpu_pods_restricted_as_read"] = [pod_ref(p) for p in unsure[:MEMBERS_SHOWN]]
    if preceded:
        evidence["calico_not_evaluated"] = [
            {"policy": ref, "why": why} for ref, why in sorted(preceded.items())[:MEMBERS_SHOWN]
        ]
    mesh, mesh_pods = meshed
    if mesh_pods:
        evidence["mesh_restricted_pods"] = [pod_ref(p) for p in mesh_pods[:MEMBERS_SHOWN]]
        evidence["mesh_config"] = mesh
        evidence["mesh_note"] = MESH_NOTE
        if len(mesh_pods) == len(open_pods) and evidence["verdict"] == "not restricted":
            evidence["verdict"] = MESH_RESTRICTED
    title = k8s007_title(
        TitleFacts(
            namespace,
            tenant.slug,
            len(open_pods),
            gpu_pod_count,
            enforced,
            str(evidence["verdict"]),
            bool(policies),
            opened_by=opened_by,
            allowing=_allowing_all(policies, open_pods),
            preceded=preceded,
            unread_kinds=sorted({p.engine.partition("/")[2] for p in unread}),
            cnis=cnis,
            refused=refused,
            restricted=len(unsure),
        )
    )
    return namespace_draft(
        "K8S-007",
        inputs,
        namespace,
        tenants=(tenant,),
        evidence=evidence,
        title=title,
        severity=_severity(evidence, opened_by),
        exposure=len(open_pods) + len(unsure),
    )


UNVERIFIED_BASIS = (
    "unverified: a policy gpuposture cannot evaluate may restrict these pods' egress, so the "
    "finding weighs as low, not as a confirmed medium (as ATTR-003 does for what it cannot see)"
)
UNLISTED_BASIS = (
    "unverified: a policy restricts these pods' egress as read, but the sync could not list "
    "policy kinds that may allow it, so the finding weighs as low, not as a confirmed medium"
)


def _severity(evidence: dict[str, object], opened_by: list[str]) -> str:
    """The check's severity ("") where egress is known open; low where a policy gpuposture
    cannot evaluate may restrict the pods, with the basis in the evidence. A pod a CNI rule
    opens is known open whatever else; a CNI whose policies were not listed at all (no policy
    known to exist) keeps the check's severity, its title saying it cannot tell, as does a pod
    nothing read restricts where the sync was refused listing a CNI's policy kinds; pods
    restricted as read, doubted only for those kinds, are low (UNLISTED_BASIS)."""
    unevaluated = "unevaluated_policies" in evidence or "calico_not_evaluated" in evidence
    # Pods restricted as read, none open, only kinds not listed in doubt: likely restricted.
    restricted = "gpu_pods_restricted_as_read" in evidence and not evidence["open_gpu_pods"]
    if evidence["verdict"] != "unknown" or opened_by or not (unevaluated or restricted):
        return ""
    evidence["basis"] = UNVERIFIED_BASIS if unevaluated else UNLISTED_BASIS
    return "low"


def _allowing_all(policies: list[NetworkPolicy], pods: list[Pod]) -> list[str]:
    """The NetworkPolicies that allow all egress of any of the pods, by name."""
    names = [
        p.name
        for p in policies
        if p.egress_allows_all and any(selects_for_egress(p, pod) for pod in pods)
    ]
    return names[:MEMBERS_SHOWN]


def _enforcement(enforced: Enforcement) -> dict[str, str]:
    """What the CNI's agents say of NetworkPolicy enforcement (cni_enforcement.py)."""
    if enforced.state == UNVERIFIED and not enforced.cni:
        return {"state": UNVERIFIED, "note": "no CNI agent DaemonSet recognised in the snapshot"}
    return {"state": enforced.state, "cni": enforced.cni, "seen": enforced.seen}
