"""Kubeflow notebooks behind Istio's Kubeflow gateway (demo/additions.py calls it last, so every
other object keeps the ids it had; KServe on Knative is demo/k8s_knative.py).

- prod-east runs Kubeflow 1.9 as its manifests install it: the istio-ingressgateway pods the
  Gateway kubeflow/kubeflow-gateway selects, oauth2-proxy as the gateway's CUSTOM authorizer,
  the require-jwt DENY and Dex's RequestAuthentication on those pods. Analytics' profile
  analytics-notebooks runs Priya's CPU notebook for feature prep, which serves without a token
  by design: the gateway authenticates every request, so K8S-006 finds nothing and the route's
  stored authentication names the policies that do it.
- neo-west's research team tried Kubeflow from the same manifests without the oauth2-proxy
  component (Dex was not wanted on the cloud): the gateway authenticates nothing, and the
  profile's ns-owner-access-istio policy checks a kubeflow-userid header any client sets.
  Mira's notebook in the research-eval profile serves code to the internet: K8S-006, with
  `route_authentication` saying why.

Pure Python: no Django, no network; deterministic for the `Ids` it is given.
"""

from __future__ import annotations

import json

from demo import k8s
from demo.cluster_parts import EVAL, NB, REG, Cluster
from demo.k8s import Ids, Obj
from demo.k8s_apps import platform_deployment, platform_namespace

ISTIO_NS, KUBEFLOW_NS = "istio-system", "kubeflow"
ISTIO_PROXY = "docker.io/istio/proxyv2:1.22.1"  # Kubeflow 1.9's Istio
GATEWAY_SA = "istio-ingressgateway-service-account"
GATEWAY_LABELS = {"app": "istio-ingressgateway", "istio": "ingressgateway"}
POLICY = "AuthorizationPolicy"
ON_GATEWAY = {"matchLabels": {"app": "istio-ingressgateway"}}
LOGIN_PATHS = {"notPaths": ["/dex/*", "/dex/**", "/oauth2/*"]}
OAUTH2_PROXY_NS = "oauth2-proxy"
OAUTH2_PROXY = "quay.io/oauth2-proxy/oauth2-proxy:v7.6.0"
NOTEBOOK_IMAGE = "kubeflownotebookswg/jupyter-scipy:v1.9.0"  # mirrored into our registry
# cluster -> (profile namespace, notebook, its owner's address, the gateway authenticates)
KUBEFLOW = {
    "prod-east": (NB, "nb-feature-prep", "priya.nair@example.com", True),
    "neo-west": (EVAL, "nb-mira", "mira.chen@example.com", False),
}
CPU_NODE = {"prod-east": "pe-cpu-01", "neo-west": "nw-cpu-01"}


def kubeflow(ids: Ids, c: Cluster, items: list[Obj]) -> list[Obj]:
    """The objects above for cluster `c`; its profile namespace among `items` gains Kubeflow's
    labels (in place, no id drawn)."""
    if c.name not in KUBEFLOW:
        return []
    profile, notebook, owner, authenticates = KUBEFLOW[c.name]
    node = CPU_NODE[c.name]
    found = [platform_namespace(ids, ISTIO_NS), platform_namespace(ids, KUBEFLOW_NS)]
    proxy = k8s.container(
        "istio-proxy", ids.pinned(ISTIO_PROXY), cpu="2", memory="1Gi", ports=(8080, 8443, 15021)
    )
    proxy["securityContext"] = {**k8s.HARDENED_CONTAINER, "runAsUser": 1337}
    found += platform_deployment(
        ids, ISTIO_NS, "istio-ingressgateway", [proxy], node, labels=GATEWAY_LABELS,
        account=GATEWAY_SA,
    )  # fmt: skip
    server = {"hosts": ["*"], "port": {"name": "http", "number": 80, "protocol": "HTTP"}}
    gateway_spec = {"selector": {"istio": "ingressgateway"}, "servers": [server]}
    m = k8s.meta(ids, "Gateway", "kubeflow-gateway", KUBEFLOW_NS)
    found.append(k8s.obj("networking.istio.io/v1", "Gateway", m, spec=gateway_spec))
    if authenticates:
        found += _gateway_authentication(ids, node)
    found += _profile(ids, c, items, profile, owner)
    found += _notebook(ids, profile, notebook, node)
    return found


def _policy(ids: Ids, kind: str, name: str, ns: str, spec: Obj) -> Obj:
    return k8s.obj("security.istio.io/v1", kind, k8s.meta(ids, kind, name, ns), spec=spec)


def _gateway_authentication(ids: Ids, node: str) -> list[Obj]:
    """Kubeflow 1.9's common/oauth2-proxy: oauth2-proxy as the gateway's CUSTOM authorizer for
    requests without a token, and a DENY of every request without a valid JWT (both but the
    login paths), the JWT being Dex's."""
    ctr = k8s.container(
        "oauth2-proxy", ids.pinned(OAUTH2_PROXY), cpu="500m", memory="256Mi",
        security=k8s.HARDENED_CONTAINER, ports=(4180,),
        args=["--http-address=0.0.0.0:4180", "--provider=oidc", "--skip-jwt-bearer-tokens=true"],
    )  # fmt: skip
    custom = {
        "action": "CUSTOM",
        "provider": {"name": "oauth2-proxy"},
        "selector": ON_GATEWAY,
        "rules": [
            {
                "to": [{"operation": LOGIN_PATHS}],
                "when": [{"key": "request.headers[authorization]", "notValues": ["*"]}],
            }
        ],
    }
    require_jwt = {
        "action": "DENY",
        "selector": ON_GATEWAY,
        "rules": [
            {
                "from": [{"source": {"notRequestPrincipals": ["*"]}}],
                "to": [{"operation": LOGIN_PATHS}],
            }
        ],
    }
    jwt = {
        "selector": ON_GATEWAY,
        "jwtRules": [
            {
                "issuer": "https://kubeflow.prod-east.example.com/dex",
                "forwardOriginalToken": True,
                "outputClaimToHeaders": [{"header": "kubeflow-userid", "claim": "email"}],
            }
        ],
    }
    return [
        platform_namespace(ids, OAUTH2_PROXY_NS),
        *platform_deployment(ids, OAUTH2_PROXY_NS, "oauth2-proxy", [ctr], node),
        _policy(ids, POLICY, "istio-ingressgateway-oauth2-proxy", ISTIO_NS, custom),
        _policy(ids, POLICY, "istio-ingressgateway-require-jwt", ISTIO_NS, require_jwt),
        _policy(ids, "RequestAuthentication", "dex-jwt", ISTIO_NS, jwt),
    ]  # fmt: skip


def _profile(ids: Ids, c: Cluster, items: list[Obj], profile: str, owner: str) -> list[Obj]:
    """The Profile, Kubeflow's labels on its (existing) namespace, and the profile controller's
    ns-owner-access-istio policy: the owner's kubeflow-userid header, from the gateway's pods or
    anywhere in the namespace."""
    for o in items:
        if o["kind"] == "Namespace" and o["metadata"]["name"] == profile:
            o["metadata"]["labels"].update(
                {"app.kubernetes.io/part-of": "kubeflow-profile", "istio-injection": "enabled"}
            )
            o["metadata"]["annotations"] = {"owner": owner}
    spec = {"owner": {"kind": "User", "name": owner}}
    found = [k8s.obj("kubeflow.org/v1", "Profile", k8s.meta(ids, "Profile", profile), spec=spec)]
    header = {"key": "request.headers[kubeflow-userid]", "values": [owner]}
    gateway = f"cluster.local/ns/{ISTIO_NS}/sa/{GATEWAY_SA}"
    rules = [
        {"when": [header]},
        {"from": [{"source": {"namespaces": [profile]}}]},
        {"from": [{"source": {"principals": [gateway]}}], "when": [header]},
    ]
    found.append(_policy(ids, POLICY, "ns-owner-access-istio", profile, {"rules": rules}))
    return found


def _notebook(ids: Ids, profile: str, name: str, node: str) -> list[Obj]:
    """A Kubeflow Notebook as its controller runs it: a StatefulSet pod with Istio's sidecar,
    the Service, and the VirtualService on the Kubeflow gateway (no token: by design)."""
    prefix = f"/notebook/{profile}/{name}"
    ctr = k8s.container(
        name, ids.pinned(f"{REG}/{NOTEBOOK_IMAGE}"), cpu="2", memory="8Gi",
        security=k8s.HARDENED_CONTAINER, env=[{"name": "NB_PREFIX", "value": prefix}],
        ports=(8888,),
    )  # fmt: skip
    ctr["ports"][0]["name"] = "notebook-port"
    sidecar = k8s.container("istio-proxy", ids.pinned(ISTIO_PROXY), cpu="100m", memory="128Mi")
    sidecar["securityContext"] = {**k8s.HARDENED_CONTAINER, "runAsUser": 1337}
    labels = {"app": name, "notebook-name": name, "statefulset": name}
    pod = k8s.pod(
        ids, f"{name}-0", profile, node=node, containers=[ctr, sidecar], labels=labels,
        owner=("apps/v1", "StatefulSet", name), service_account="default-editor",
        pod_security=k8s.HARDENED_POD,
    )  # fmt: skip
    status = {"containers": ["istio-proxy"], "initContainers": [], "volumes": []}
    pod["metadata"]["annotations"] = {"sidecar.istio.io/status": json.dumps(status)}
    spec = {"template": {"spec": {"containers": [{"name": name, "image": ctr["image"]}]}}}
    m = k8s.meta(ids, "Notebook", name, profile)
    notebook = k8s.obj("kubeflow.org/v1", "Notebook", m, spec=spec)
    # The controller's StatefulSet, owned by the Notebook (its template is the pod's).
    m = k8s.meta(ids, "StatefulSet", name, profile, owner=("kubeflow.org/v1", "Notebook", name))
    selector = {"matchLabels": {"statefulset": name}}
    sts_spec = {"replicas": 1, "serviceName": "", "selector": selector}
    stateful_set = k8s.obj("apps/v1", "StatefulSet", m, spec=sts_spec, status={"readyReplicas": 1})
    service = k8s.service(ids, profile, name, name, 80)
    service["spec"]["selector"] = {"statefulset": name}
    service["spec"]["ports"][0].update(name=f"http-{name}", targetPort=8888)
    host = f"{name}.{profile}.svc.cluster.local"
    route = {
        "match": [{"uri": {"prefix": f"{prefix}/"}}],
        "rewrite": {"uri": f"{prefix}/"},
        "route": [{"destination": {"host": host, "port": {"number": 80}}}],
    }
    vs_spec = {"gateways": [f"{KUBEFLOW_NS}/kubeflow-gateway"], "hosts": ["*"], "http": [route]}
    m = k8s.meta(ids, "VirtualService", f"notebook-{profile}-{name}", profile)
    vs = k8s.obj("networking.istio.io/v1", "VirtualService", m, spec=vs_spec)
    return [notebook, stateful_set, pod, service, vs]
