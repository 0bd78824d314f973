"""What each demo cluster runs that the world's first tables left out, generated after every
other object so those keep the ids they had (demo/world.py draws ids in sequence).

- Each cluster's CNI, as its own DaemonSet in the namespace its manifest uses: prod-east runs
  Calico (its manifest install, calico-node in kube-system), neo-west flannel alone (flannel's
  kube-flannel.yml). gke-central is told by GKE's own kube-system DaemonSets already. K8S-007
  reads them: a NetworkPolicy restricts only where the CNI enforces it. neo-west's Cilium
  CRDs outlived a Cilium trial (uninstalling Cilium leaves its CRDs), so the API still accepts
  research's CiliumNetworkPolicy, which nothing enforces. On prod-east the imaging vendor's
  support engineer added a Calico policy so the Triton servers reach its licence server: an
  Allow to every address, which Calico evaluates before the Kubernetes NetworkPolicy that
  locks clinical's egress, so that lock no longer holds for them (K8S-007).
- On prod-east, whose toolkits honour NVIDIA_VISIBLE_DEVICES from unprivileged containers
  (STACK-008), an intern's notebook in the sandbox nobody claims copied research's sweep
  manifest (its toleration and pool) but not its GPU request, and sets
  NVIDIA_VISIBLE_DEVICES=all instead: no scheduler or quota counts it, and it time-shares every
  GPU of research's node (POD-011, SHARE-001/003, POD-009).
- On neo-west, orbital's open notebook is also published through Contour's own HTTPProxy (the
  cloud's shared gateway is Contour's; K8S-006 names this way in too).
- On prod-east, research rotates the NGC pull secret in gpu-operator itself (create, get and
  update on Secrets there): enough to have the token controller mint a token for the
  operator's own service account, and act as it (RBAC escalation paths).
- On prod-east, an AMD MI300X node in CPX compute partitioning and an Intel Flex node whose
  one card the GPU plugin shares four ways, with both vendors' operators and two tenants' pods
  on each (demo/other_vendors.py).
- On gke-central, research's and analytics' default ServiceAccounts are federated to one Google
  service account (GKE Workload Identity, the pool runs GKE's metadata server): one identity
  for two tenants' GPU pods (POD-010).
- Last, the NVIDIA nodes the clusters gained since: a vGPU guest VM, a DRA-only node, a
  Koordinator GPU-share pool and an H200 node handed between customers (demo/later_nodes.py).
- Newest: research's vcluster and the pods its syncer wrote, a Jetson reached through
  RuntimeClass `nvidia`, and an AMD MI300X node only AMD's DRA driver serves (demo/newest.py).
- After those, on prod-east: research's tokenizer Job whose generic ephemeral volume's claim
  is bound to a hostPath PV of the node's /var/lib (demo/k8s_storage.py).
- Last, gateways and controllers: Kubeflow notebooks behind Istio's Kubeflow gateway, which
  authenticates on prod-east and not on neo-west (demo/k8s_serving.py); orbital's KServe
  serverless vLLM on Knative with Kourier on neo-west (demo/k8s_knative.py); on prod-east an
  OpenKruise SidecarSet injecting a /var/log/pods hostPath into research's vLLM pods, and an
  Argo Rollout running orbital's Deployment fold-api by workloadRef (demo/k8s_rollouts.py).

Pure Python: no Django, no network; deterministic for the `Ids` it is given.
"""

from __future__ import annotations

from demo import k8s
from demo.cluster_parts import CLIN, EVAL, NB, ORB, REG, SANDBOX, Cluster
from demo.k8s import Ids, Obj
from demo.k8s_knative import kserve
from demo.k8s_rollouts import rollouts
from demo.k8s_serving import kubeflow
from demo.k8s_storage import ephemeral_scratch
from demo.later_nodes import later_nodes
from demo.newest import newest
from demo.other_vendors import other_vendors

# calico.yaml (Calico's manifest install): the calico-node DaemonSet in kube-system.
CALICO = k8s.DaemonSetSpec(
    "calico-node",
    "calico-node",
    "docker.io/calico/node:v3.28.2",
    "kube-system",
    host_paths=("/lib/modules", "/run/xtables.lock", "/var/run/calico", "/var/lib/calico"),
)
# flannel's kube-flannel.yml: its own namespace, DaemonSet kube-flannel-ds. No policy engine.
FLANNEL_NS = "kube-flannel"
FLANNEL = k8s.DaemonSetSpec(
    "kube-flannel-ds",
    "kube-flannel",
    "ghcr.io/flannel-io/flannel:v0.26.1",
    FLANNEL_NS,
    privileged=False,  # the manifest adds NET_ADMIN and NET_RAW instead
    host_paths=("/run/flannel", "/etc/cni/net.d", "/etc/kube-flannel/"),
)
CNI = {"prod-east": CALICO, "neo-west": FLANNEL}


# The node the intern's notebook runs on (research's time-sliced pool), and what it sets.
ENV_NODE = ("prod-east", "pe-l40s-02")
ENV_POD = "gpu-scratch"
ENV_ALL = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}
# cluster -> namespaces whose `default` ServiceAccount is federated, and to which identity.
GKE_IDENTITY = "iam.gke.io/gcp-service-account"
SHARED_GSA = "gpu-burst@acme-ml-prod.iam.gserviceaccount.com"
FEDERATED = {"gke-central": {EVAL: SHARED_GSA, NB: SHARED_GSA}}


def additions(ids: Ids, c: Cluster, items: list[Obj]) -> list[Obj]:
    """The objects above for cluster `c`, in the order they are generated; the federated
    ServiceAccounts of `items` are annotated in place (no id drawn)."""
    _federate(c, items)
    added = (
        _cni(ids, c)
        + _env_access(ids, c)
        + _contour_route(ids, c)
        + _secret_rotator(ids, c)
        + other_vendors(ids, c, items, CALICO)
    )
    later = later_nodes(ids, c, items + added, CNI.get(c.name))
    latest = newest(ids, c, items + added + later, CNI.get(c.name))
    scratch = ephemeral_scratch(ids, c)
    # Last: what the tenants serve through gateways (demo/k8s_serving.py, demo/k8s_knative.py).
    served = kubeflow(ids, c, items + added + later + latest)
    served += kserve(ids, c, items + added + later + latest)
    # And what an injector and a rollout controller do to tenant pods (demo/k8s_rollouts.py).
    controlled = rollouts(ids, c, items + added + later + latest)
    return added + later + latest + scratch + served + controlled


def _federate(c: Cluster, items: list[Obj]) -> None:
    accounts = FEDERATED.get(c.name, {})
    for o in items:
        m = o["metadata"]
        if o["kind"] == "ServiceAccount" and m["name"] == "default" and m["namespace"] in accounts:
            m["annotations"] = {GKE_IDENTITY: accounts[m["namespace"]]}


def _env_access(ids: Ids, c: Cluster) -> list[Obj]:
    n = next((n for n in c.nodes if (c.name, n.name) == ENV_NODE), None)
    if n is None:
        return []
    image = ids.pinned(f"{REG}/research/notebook:2024.10")
    ctr = k8s.container(
        ENV_POD, image, cpu="4", memory="32Gi", security=k8s.HARDENED_CONTAINER, env=[ENV_ALL]
    )
    pod = k8s.pod(
        ids,
        ENV_POD,
        SANDBOX,
        node=n.name,
        containers=[ctr],
        labels={"app": ENV_POD},
        tolerations=[k8s.toleration(*t) for t in n.taints],
        node_selector={"gpuposture.io/pool": n.pool},
        pod_security=k8s.HARDENED_POD,
        restart_policy="Never",
    )
    return [pod]


def _cni(ids: Ids, c: Cluster) -> list[Obj]:
    ds = CNI.get(c.name)
    if ds is None:
        return []
    items = []
    if ds.namespace == FLANNEL_NS:
        # The manifest's labels; the platform team labels it theirs, as gpuposture asks for a
        # platform namespace outside the Kubernetes defaults.
        labels = {
            "k8s-app": "flannel",
            "pod-security.kubernetes.io/enforce": "privileged",
            "gpuposture.io/platform": "true",
        }
        items.append(k8s.namespace(ids, FLANNEL_NS, labels))
        account = k8s.meta(ids, "ServiceAccount", "default", FLANNEL_NS)
        items.append(k8s.obj("v1", "ServiceAccount", account))
    platform = k8s.Platform(ids)
    for n in c.nodes:  # a CNI agent runs on every node
        platform.place(ds, n.name)
    items += platform.objects()
    if ds is CALICO:
        items.append(_licence_server_allow(ids))
    return items


def _licence_server_allow(ids: Ids) -> Obj:
    """A Calico NetworkPolicy as its CRD stores it (a manifest install has no Calico API
    server; the CRD's name carries the tier): Allow with no destination is every address."""
    spec = {
        "tier": "default",
        "order": 500,
        "selector": "app == 'triton-ct-seg'",
        "types": ["Egress"],
        "egress": [{"action": "Allow"}],
    }
    m = k8s.meta(ids, "NetworkPolicy", "default.allow-licence-server", CLIN)
    return k8s.obj("crd.projectcalico.org/v1", "NetworkPolicy", m, spec=spec)


def _contour_route(ids: Ids, c: Cluster) -> list[Obj]:
    """A Contour HTTPProxy to orbital's Jupyter, TLS at the virtual host and no authentication
    (no authorization server, no JWT provider)."""
    if c.name != "neo-west":
        return []
    spec = {
        "virtualhost": {"fqdn": "lab.orbital.example.com", "tls": {"secretName": "lab-tls"}},
        "routes": [
            {"conditions": [{"prefix": "/"}], "services": [{"name": "jupyter", "port": 8888}]}
        ],
    }
    m = k8s.meta(ids, "HTTPProxy", "jupyter-lab", ORB)
    status = {"currentStatus": "valid", "description": "Valid HTTPProxy"}
    return [k8s.obj("projectcontour.io/v1", "HTTPProxy", m, spec=spec, status=status)]


def _secret_rotator(ids: Ids, c: Cluster) -> list[Obj]:
    """A ClusterRole writing Secrets, bound to research in the GPU Operator's namespace only."""
    if c.name != "prod-east":
        return []
    rules = [k8s.rule([""], ["secrets"], ["create", "get", "update"])]
    name = "research-ngc-secret"
    return [
        k8s.role(ids, "secret-rotator", rules),
        k8s.binding(ids, name, "secret-rotator", "Group:research-ml", k8s.GPU_OPERATOR_NS),
    ]
