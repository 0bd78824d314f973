"""The other Kubernetes objects of a snapshot: namespaces, service accounts, quotas,
controllers, services, RBAC, ingresses, network policies, GPU Operator policies and ownership
links."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inventory.snapshot.pods import Pod


@dataclass(frozen=True)
class Namespace:
    name: str
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ServiceAccount:
    """A ServiceAccount as POD-010 reads it: the cloud identity its workload-identity
    annotations federate it to (inventory/sources/service_accounts.py keeps only those)."""

    namespace: str
    name: str
    identities: dict[str, str] = field(default_factory=dict)  # annotation -> value


@dataclass(frozen=True)
class ResourceQuota:
    namespace: str
    name: str
    hard: dict[str, str] = field(default_factory=dict)
    # A scoped quota counts only the pods its scopes match (Terminating, BestEffort, ...) and
    # its scopeSelector's expressions ({"scopeName", "operator", "values"}), e.g. PriorityClass.
    scopes: tuple[str, ...] = ()
    scope_selector: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Workload:
    """A controller (DaemonSet, Deployment, StatefulSet, CronJob, a Job no controller owns)
    with the images of its pod template."""

    kind: str
    namespace: str
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)  # container name -> image
    spec_hash: str = ""
    # GPU-stack controllers only: the ConfigMaps their pods mount or read (volumes, envFrom,
    # configMapKeyRef), which is where the device plugin and MIG Manager take their config.
    config_refs: tuple[str, ...] = ()
    # GPU-stack DaemonSets only: where the template's pods may run (inventory.placement), so
    # a node without the component's pod can be told "not installed" from "pod missing".
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, str], ...] = ()
    affinity_terms: tuple[dict[str, Any], ...] = ()  # required nodeSelectorTerms, as written
    # The pod template as a Pod (phase TEMPLATE_PHASE, named after the controller), so a
    # workload with no pod running is still judged by the pod-hardening checks; None when
    # the object has no pod spec. `replicas` as the spec says (spec.replicas, a Job's
    # parallelism; None for a DaemonSet: one per matching node); `suspended` for a CronJob or
    # Job with spec.suspend.
    template: Pod | None = None
    replicas: int | None = None
    suspended: bool = False


@dataclass(frozen=True)
class Service:
    namespace: str
    name: str
    type: str = "ClusterIP"
    selector: dict[str, str] = field(default_factory=dict)
    ports: tuple[int, ...] = ()  # target ports where numeric, else service ports
    # Each port's targetPort as written: a number ("8888") or a container port's name.
    targets: tuple[str, ...] = ()
    # spec.externalIPs: the cluster routes these addresses to the Service, whatever its type.
    external_ips: tuple[str, ...] = ()
    # A LoadBalancer the cloud's annotation makes internal (reachable from the VPC / VNet, not
    # the internet: still beyond the node), as "annotation=value"; "" when not said.
    internal_lb: str = ""
    # spec.loadBalancerSourceRanges: the client ranges the load balancer admits.
    source_ranges: tuple[str, ...] = ()
    # Each port as an Ingress or route names it: (its name, "" if none; its service port; the
    # number `ports` lists for it). () where not read (stored before it was).
    port_map: tuple[tuple[str, int, int], ...] = ()


@dataclass(frozen=True)
class PolicyRule:
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Role:
    kind: str  # "Role" or "ClusterRole"
    name: str
    namespace: str | None = None
    rules: tuple[PolicyRule, ...] = ()
    aggregation_labels: tuple[dict[str, str], ...] = ()  # each selector's matchLabels
    labels: dict[str, str] = field(default_factory=dict)
    # Each clusterRoleSelector whole: {"matchLabels": {...}, "matchExpressions": [{"key",
    # "operator", "values"}]}; empty on syncs stored before it was read (aggregation_labels).
    aggregation_selectors: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Subject:
    kind: str  # "User", "Group", "ServiceAccount"
    name: str
    namespace: str | None = None


@dataclass(frozen=True)
class RoleBinding:
    kind: str  # "RoleBinding" or "ClusterRoleBinding"
    name: str
    namespace: str | None
    role_kind: str
    role_name: str
    subjects: tuple[Subject, ...] = ()


@dataclass(frozen=True)
class Ingress:
    namespace: str
    name: str
    ingress_class: str | None = None
    hosts: tuple[str, ...] = ()
    services: tuple[str, ...] = ()  # backend Service names in the same namespace
    # "Ingress", or a Gateway API route ("HTTPRoute", "GRPCRoute") read the same way: its
    # hostnames and the Services its backendRefs name.
    kind: str = "Ingress"
    # A route's backendRefs to Services of other namespaces ("namespace/name"): they carry
    # traffic where a ReferenceGrant there allows it (not read), unless the route's status says
    # the reference was refused.
    remote_services: tuple[str, ...] = ()
    # The controller authenticates every request before the backend sees it, as an annotation
    # says (inventory/sources/exposure.py INGRESS_AUTH): "annotation=value", else "". An Istio
    # VirtualService's is read from Istio's policies (inventory/sources/istio_auth.py): the
    # policy that authenticates, "unknown: " what was not evaluated, or "none: " why nothing
    # in front of it authenticates.
    auth: str = ""
    # The Service ports it routes to, "service:port" (a number or a port's name as written;
    # "service:*" where a backend names no port; "service:=N" the target port N an OpenShift
    # Route's numeric targetPort names): Ingresses, Gateway API and OpenShift routes; () where
    # not read (other routes, or stored before it was): every port of the Service.
    backend_ports: tuple[str, ...] = ()
    # The gateways it is bound to, "namespace/name" (an Istio VirtualService's Gateways): how
    # traffic from outside reaches it, said in K8S-006's evidence.
    gateways: tuple[str, ...] = ()


@dataclass(frozen=True)
class NetworkPolicy:
    namespace: str
    name: str
    pod_selector: dict[str, str] = field(default_factory=dict)  # matchLabels; {} selects all
    selects_all_pods: bool = True
    policy_types: tuple[str, ...] = ()
    ingress_rules: int = 0
    egress_rules: int = 0
    # The podSelector's matchExpressions, as written (key, operator, values).
    match_expressions: tuple[dict[str, Any], ...] = ()
    # An egress rule that lets the selected pods reach the internet: no `to` and no `ports`,
    # or `to` an ipBlock 0.0.0.0/0 or ::/0 (whatever its `except`) on every port. Policies add
    # up, so such a rule undoes every other egress policy selecting the same pods.
    egress_allows_all: bool = False
    # "" for a Kubernetes NetworkPolicy; else the CNI's own kind ("cilium.io/CiliumNetworkPolicy",
    # inventory/sources/cni_policies.py), kept by name only and never evaluated.
    engine: str = ""
    # A Cilium policy whose one rule denies egress to the internet (egressDeny toEntities
    # world/all, every port) for the endpoints its selector (pod_selector, match_expressions)
    # picks: Cilium's deny wins over every allow. Its other rules are still not evaluated.
    egress_denies_world: bool = False
    # Calico policies only: the tier ("default" when unset) and the policy's `order` (None:
    # last); a Calico Tier object: its name and order.
    tier: str = ""
    order: float | None = None
    # Calico policies only (inventory/sources/cni_calico.py): the selector ("all()" when empty;
    # "" on policies stored before it was kept) and namespaceSelector as written, and each
    # egress rule as "action:reach", evaluated in Calico's order by K8S-007. A Calico Tier
    # (engine ".../Tier", tier its name, order its order) keeps its end as its one step.
    selector_expr: str = ""
    namespace_selector_expr: str = ""
    egress_steps: tuple[str, ...] = ()
    # The ports on which its egress rules let the selected pods reach the internet, where they
    # do so only on some ports ("443/TCP"; inventory/sources/egress_ports.py): a restriction,
    # said in K8S-007's evidence. () where no rule reaches the internet on only some ports.
    internet_ports: tuple[str, ...] = ()
    # Cilium policies only: the ports of its rule's egressDeny to the world limited by toPorts
    # ("25/TCP"), denied to the pods it selects whatever allows them; their internet egress on
    # other ports stays as the allows leave it (inventory/sources/cni_policies.py).
    egress_denied_ports: tuple[str, ...] = ()
    # Cilium policies only: whose egress its rules (spec and each of specs) can restrict
    # (inventory/sources/cni_policies.py cilium_egress_subjects): "pods" where a rule selecting
    # endpoints (endpointSelector) has an egress or egressDeny section; "nodes" where only
    # rules selecting nodes (nodeSelector: a host firewall, which also holds hostNetwork pods)
    # do; "none" where no rule has one (an ingress-only policy). "" where not read (other
    # kinds, or stored before it was): it may restrict any pod's egress.
    egress_subjects: str = ""


@dataclass(frozen=True)
class GpuOperatorPolicy:
    """A GPU Operator ClusterPolicy: its name and what it configures (see
    inventory/sources/gpu_operator.py for the fields of `spec`)."""

    name: str
    spec: dict[str, Any] = field(default_factory=dict)
    spec_hash: str = ""
    error: str = ""  # why the object could not be read ("" when it was)


@dataclass(frozen=True)
class OwnerLink:
    """Who owns an object a pod's owner chain passes through (its controller ownerReference),
    or that it exists (a CronJob; a cluster-scoped owner, and so its scope): enough to name the
    workload behind a pod (inventory/owners.py, sources/owner_links.py). Never the object's
    spec. Every ReplicaSet, Job and CronJob has one."""

    kind: str  # "ReplicaSet", "Job", "CronJob", or any kind ("RayCluster", "Job.batch.volcano.sh")
    namespace: str  # "" for a cluster-scoped object (a ClusterPolicy)
    name: str
    owner_kind: str | None = None  # None: it has no owner (a bare ReplicaSet or Job)
    owner_name: str | None = None
    # The owner reference's uid and apiVersion ("" where it gives none), and what the snapshot
    # holds of that owner (as Pod.owner_found: "read", "absent", "replaced", "elsewhere"; ""
    # where not recorded, a link stored before it was).
    owner_uid: str = ""
    owner_api_version: str = ""
    owner_found: str = ""
    # How the owner was named: "" by the controller ownerReference; "spec.workloadRef" where
    # an Argo Rollout runs the pod template of the workload it names there (the Rollout has no
    # template of its own: that workload's is the one to edit, inventory.owners).
    owner_via: str = ""
