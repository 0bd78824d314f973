"""What a live sync lists from the Kubernetes API, kind by kind, and which kinds may be absent.
Pure data: inventory/sources/kube.py makes the calls."""

from __future__ import annotations

from inventory.sources.kube_admission import ADMISSION_LABELS

# (kind, API group class, list method). The deploy ClusterRole grants get/list/watch on
# exactly these resources; keep the two in step (tests/test_deploy_rbac.py).
KINDS: tuple[tuple[str, str, str], ...] = (
    ("Node", "CoreV1Api", "list_node"),
    ("Namespace", "CoreV1Api", "list_namespace"),
    ("Pod", "CoreV1Api", "list_pod_for_all_namespaces"),
    ("ResourceQuota", "CoreV1Api", "list_resource_quota_for_all_namespaces"),
    ("ConfigMap", "CoreV1Api", "list_config_map_for_all_namespaces"),
    ("Service", "CoreV1Api", "list_service_for_all_namespaces"),
    ("DaemonSet", "AppsV1Api", "list_daemon_set_for_all_namespaces"),
    ("Deployment", "AppsV1Api", "list_deployment_for_all_namespaces"),
    # Judged from their pod template while no pod of theirs runs (posture template pods).
    ("StatefulSet", "AppsV1Api", "list_stateful_set_for_all_namespaces"),
    ("CronJob", "BatchV1Api", "list_cron_job_for_all_namespaces"),
    # Only their owners are kept: the workload behind each pod (inventory/owners.py).
    ("ReplicaSet", "AppsV1Api", "list_replica_set_for_all_namespaces"),
    ("Job", "BatchV1Api", "list_job_for_all_namespaces"),
    ("Role", "RbacAuthorizationV1Api", "list_role_for_all_namespaces"),
    ("ClusterRole", "RbacAuthorizationV1Api", "list_cluster_role"),
    ("RoleBinding", "RbacAuthorizationV1Api", "list_role_binding_for_all_namespaces"),
    ("ClusterRoleBinding", "RbacAuthorizationV1Api", "list_cluster_role_binding"),
    ("Ingress", "NetworkingV1Api", "list_ingress_for_all_namespaces"),
    ("NetworkPolicy", "NetworkingV1Api", "list_network_policy_for_all_namespaces"),
    # hostPath and local volumes a pod reaches through a claim (the claim's PV names it).
    ("PersistentVolume", "CoreV1Api", "list_persistent_volume"),
    # The cloud identity each is federated to, from its annotations (POD-010).
    ("ServiceAccount", "CoreV1Api", "list_service_account_for_all_namespaces"),
    # The handler of each class a pod names: a Kata VM runtime, or NVIDIA's runtime that
    # reaches a node's GPUs with no device plugin (inventory/sources/nvidia_runtime.py).
    ("RuntimeClass", "NodeV1Api", "list_runtime_class"),
)


def plural(kind: str) -> str:
    """The resource name of a custom kind, as its CRD names it (NetworkPolicy: networkpolicies)."""
    name = kind.lower()
    if name.endswith("s"):
        return name + "es"  # Kong's TCPIngress: tcpingresses
    # NetworkPolicy: networkpolicies; Istio's Gateway: gateways (a vowel before the y).
    return name[:-1] + "ies" if name.endswith("y") and name[-2:-1] not in "aeiou" else name + "s"


# The egress controls of CNIs and the routes of gateways and ingress controllers that K8S-006
# and K8S-007 read (inventory/sources/cni_policies.py, exposure.py): labelled "group/Kind",
# since Calico's and Antrea's kind is also `NetworkPolicy`. Most clusters serve few of them.
NETWORK_CUSTOM_KINDS: tuple[tuple[str, str, str], ...] = (
    ("cilium.io", "v2", "CiliumNetworkPolicy"),
    ("cilium.io", "v2", "CiliumClusterwideNetworkPolicy"),
    ("crd.projectcalico.org", "v1", "NetworkPolicy"),
    ("crd.projectcalico.org", "v1", "GlobalNetworkPolicy"),
    # Calico's tiers: the order in which their policies are evaluated, and each tier's end.
    ("crd.projectcalico.org", "v1", "Tier"),
    # Calico's network sets: the nets a rule's destination selector picks (calico_sets.py).
    ("crd.projectcalico.org", "v1", "GlobalNetworkSet"),
    ("crd.projectcalico.org", "v1", "NetworkSet"),
    ("crd.antrea.io", "v1beta1", "NetworkPolicy"),
    ("crd.antrea.io", "v1beta1", "ClusterNetworkPolicy"),
    ("policy.networking.k8s.io", "v1alpha1", "AdminNetworkPolicy"),
    ("policy.networking.k8s.io", "v1alpha1", "BaselineAdminNetworkPolicy"),
    ("policy.networking.k8s.io", "v1alpha2", "ClusterNetworkPolicy"),
    ("k8s.ovn.org", "v1", "EgressFirewall"),
    ("network.openshift.io", "v1", "EgressNetworkPolicy"),
    ("networking.gke.io", "v1alpha3", "FQDNNetworkPolicy"),
    ("gateway.networking.k8s.io", "v1", "HTTPRoute"),
    ("gateway.networking.k8s.io", "v1", "GRPCRoute"),
    ("gateway.networking.k8s.io", "v1alpha2", "TLSRoute"),
    ("gateway.networking.k8s.io", "v1alpha2", "TCPRoute"),
    ("route.openshift.io", "v1", "Route"),
    ("traefik.io", "v1alpha1", "IngressRoute"),
    ("traefik.io", "v1alpha1", "IngressRouteTCP"),
    ("traefik.containo.us", "v1alpha1", "IngressRoute"),
    ("traefik.containo.us", "v1alpha1", "IngressRouteTCP"),
    # Meshes' and ingress controllers' own routes (mesh_routes.py), and Istio's Sidecar whose
    # outbound policy REGISTRY_ONLY limits egress through the proxy (cni_policies.py).
    ("networking.istio.io", "v1beta1", "VirtualService"),
    ("networking.istio.io", "v1beta1", "Sidecar"),
    # What may authenticate a VirtualService's requests (istio_auth.py): the policies, the
    # Gateways whose pods they apply to, EnvoyFilters adding external authorization.
    ("security.istio.io", "v1beta1", "AuthorizationPolicy"),
    ("security.istio.io", "v1beta1", "RequestAuthentication"),
    ("networking.istio.io", "v1beta1", "Gateway"),
    ("networking.istio.io", "v1alpha3", "EnvoyFilter"),
    # Knative's own Ingress, the route where Kourier publishes a revision (knative.py).
    ("networking.internal.knative.dev", "v1alpha1", "Ingress"),
    ("projectcontour.io", "v1", "HTTPProxy"),
    ("getambassador.io", "v3alpha1", "Mapping"),
    ("k8s.nginx.org", "v1", "VirtualServer"),
    ("k8s.nginx.org", "v1", "VirtualServerRoute"),
    ("configuration.konghq.com", "v1beta1", "TCPIngress"),
)
OPTIONAL_CUSTOM_KINDS: tuple[tuple[str, str, str, str], ...] = (
    ("ClusterPolicy", "nvidia.com", "v1", "clusterpolicies"),
    *(
        (f"{group}/{kind}", group, version, plural(kind))
        for group, version, kind in NETWORK_CUSTOM_KINDS
    ),
)
# Core kinds an account from before they were read may not list: a 403 is a warning on the run
# saying what goes unjudged, never a failed sync.
REFUSABLE_KINDS: dict[str, str] = {
    # Tenants' namespaces by label are then those the last sync that read Namespaces stored
    # (inventory.sync_namespaces), never "unowned" because this one did not read them.
    "Namespace": "the namespace labels (gpuposture.io/tenant, gpuposture.io/platform) are not "
    "read this sync; grant get/list/watch on namespaces (deploy/rbac.yaml)",
    "PersistentVolume": "claims bound to hostPath or local PersistentVolumes are not judged "
    "(POD-003); grant get/list/watch on persistentvolumes (deploy/rbac.yaml)",
    "ServiceAccount": "cloud identities federated through ServiceAccount annotations (GKE "
    "Workload Identity; IRSA or Azure Workload Identity where pods carry no env) are not seen "
    "(POD-010); grant get/list/watch on serviceaccounts (deploy/rbac.yaml)",
    "RuntimeClass": "a pod's RuntimeClass is judged by its name, not its handler (a Kata VM "
    "runtime, or NVIDIA's runtime that shows a node's GPUs: POD-011, STACK-004); grant "
    "get/list/watch on runtimeclasses.node.k8s.io (deploy/rbac.yaml)",
    **{
        f"{group}/{kind}": f"what its {kind} objects allow or route is not seen (K8S-006, "
        f"K8S-007); grant get/list/watch on {plural(kind)}.{group} (deploy/rbac.yaml)"
        for group, _, kind in NETWORK_CUSTOM_KINDS
    },
}
# Custom resources that may not be installed: (kind, group, version, plural). A 404 means
# the CRD is absent (no GPU Operator), which is an answer, not a failure.
# Dynamic Resource Allocation (resource.k8s.io): GA as v1 in Kubernetes 1.34, served as
# v1beta2 / v1beta1 before. Each kind is read at the first version the server answers; a group
# not served at all (404, or a 403 where discovery serves it at no version) is a cluster without
# DRA, an account that may not list it (403) a warning on the run: the GPUs its claims hold are
# then not seen.
DRA_GROUP = "resource.k8s.io"
DRA_VERSIONS: tuple[tuple[str, str], ...] = (
    ("v1", "ResourceV1Api"),
    ("v1beta2", "ResourceV1beta2Api"),
    ("v1beta1", "ResourceV1beta1Api"),
)
DRA_LIST_METHODS: tuple[tuple[str, str], ...] = (
    ("DeviceClass", "list_device_class"),
    ("ResourceClaim", "list_resource_claim_for_all_namespaces"),
    ("ResourceClaimTemplate", "list_resource_claim_template_for_all_namespaces"),
    ("ResourceSlice", "list_resource_slice"),
)
DRA_KINDS = frozenset(kind for kind, _ in DRA_LIST_METHODS)
NOT_LISTED = "-"  # the watch position of a kind the last full list was refused (or, before
# NOT_SERVED existed, found not served): asked again at every watch re-sync
NOT_SERVED = "--"  # the watch position of a kind the last full list found not served (404): no
# CRD, no API group. Asked again only at the next full list, so a cluster without DRA or a CNI's
# CRDs does not pay one request per missing kind at every watch re-sync.
# Admission control (inventory/sources/kube_admission.py): listed like DRA, tolerantly.
TOLERANT_KINDS = DRA_KINDS | frozenset(ADMISSION_LABELS) | frozenset(REFUSABLE_KINDS)
OPTIONAL_KINDS = frozenset(kind for kind, *_ in OPTIONAL_CUSTOM_KINDS) | TOLERANT_KINDS
