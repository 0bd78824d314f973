"""normalise(): ConfigMaps, sharing configs, workloads, services, RBAC, namespaces, quotas."""

from __future__ import annotations

import pytest
import yaml

from inventory.snapshot import Subject
from inventory.sources.normalise import normalise
from tests.inventory.normalise_helpers import PLATFORM, TIME_SLICING, configmap

MPS = """\
version: v1
sharing:
  mps:
    renameByDefault: true
    resources:
    - name: nvidia.com/gpu
      replicas: 3
"""

# --- ConfigMaps and sharing configs ------------------------------------------------------------


def test_device_plugin_configmap_gives_one_sharing_config_per_key():
    data = {
        "h100-shared": TIME_SLICING,
        "l4-mps": MPS,
        "a100-exclusive": "version: v1\nflags:\n  migStrategy: mixed\n",
        "README": "Edit with care: the plugin reloads on change.",
    }
    snapshot = normalise([configmap("gpu-operator", "plugin-config", data)], **PLATFORM)
    (cm,) = snapshot.configmaps
    assert (cm.purpose, cm.keys) == (
        "device_plugin",
        ("README", "a100-exclusive", "h100-shared", "l4-mps"),
    )
    exclusive, shared, mps = snapshot.sharing_configs
    assert (exclusive.key, exclusive.mode, exclusive.mig_strategy, exclusive.replicas) == (
        "a100-exclusive",
        "none",
        "mixed",
        None,
    )
    assert (shared.mode, shared.replicas, shared.fail_requests_greater_than_one) == (
        "time_slicing",
        4,
        True,
    )
    assert shared.resources == ("nvidia.com/gpu", "nvidia.com/mig-1g.10gb")
    assert (mps.mode, mps.replicas, mps.rename_by_default, mps.resources) == (
        "mps",
        3,
        True,
        ("nvidia.com/gpu",),
    )


def test_other_configmaps_are_dropped_and_counted():
    objects = [
        configmap(
            "team-alpha",
            "app-settings",
            {"DATABASE_URL": "postgres://u:pw@db/app", "debug": "true"},
        ),
        configmap("kube-system", "coredns", {"Corefile": ".:53 {\n    errors\n}\n"}),
        configmap("team-alpha", "empty", None),
    ]
    snapshot = normalise(objects)
    assert (snapshot.configmaps, snapshot.sharing_configs, snapshot.warnings) == ((), (), ())
    assert snapshot.counts == {"ConfigMap": 3}


def test_mig_parted_configmap():
    data = {
        "config.yaml": (
            "version: v1\nmig-configs:\n"
            "  all-disabled:\n    - devices: all\n      mig-enabled: false\n"
        )
    }
    (cm,) = normalise([configmap("gpu-operator", "custom-mig-config", data)], **PLATFORM).configmaps
    assert (cm.purpose, cm.keys) == ("mig_parted", ("config.yaml",))


def test_data_hash_ignores_key_order_and_sees_changes():
    a = configmap(
        "gpu-operator", "ts", {"a": TIME_SLICING, "b": "version: v1\nflags:\n  migStrategy: none\n"}
    )
    b = configmap(
        "gpu-operator", "ts", {"b": "version: v1\nflags:\n  migStrategy: none\n", "a": TIME_SLICING}
    )
    c = configmap("gpu-operator", "ts", {"a": TIME_SLICING.replace("replicas: 4", "replicas: 5")})
    hashes = [normalise([x], **PLATFORM).configmaps[0].data_hash for x in (a, b, c)]
    assert hashes[0] == hashes[1] != hashes[2]
    assert len(hashes[0]) == 64


@pytest.mark.parametrize(
    ("value", "unreadable"),
    [
        ("version: v1\nsharing:\n  timeSlicing:\n    resources: [\n", True),
        ('#!/bin/sh\necho "status: $x"\nif [ -f a ]; then\n  echo "ready: yes"\nfi\n', False),
    ],
)
def test_unparseable_configmap_is_kept_as_unreadable_only_when_it_looks_like_config(
    value, unreadable
):
    snapshot = normalise([configmap("gpu-operator", "broken", {"config.yaml": value})], **PLATFORM)
    assert snapshot.sharing_configs == ()
    assert bool(snapshot.warnings) is unreadable
    if unreadable:
        (cm,) = snapshot.configmaps
        assert (cm.purpose, list(cm.unreadable)) == ("device_plugin", ["config.yaml"])
        assert "not valid YAML" in cm.unreadable["config.yaml"]
        assert "gpu-operator/broken" in snapshot.warnings[0]
    else:
        assert snapshot.configmaps == ()


# --- workloads, services, RBAC, namespaces, quotas ---------------------------------------------


def test_workload_images_labels_and_spec_hash():
    ds = {
        "kind": "DaemonSet",
        "metadata": {
            "name": "nvidia-device-plugin-daemonset",
            "namespace": "gpu-operator",
            "labels": {"app": "nvidia-device-plugin-daemonset"},
        },
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {
                    "initContainers": [
                        {
                            "name": "toolkit-validation",
                            "image": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.2",
                        }
                    ],
                    "containers": [
                        {
                            "name": "nvidia-device-plugin",
                            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                        }
                    ],
                },
            }
        },
    }
    (workload,) = normalise([ds]).workloads
    assert workload.kind == "DaemonSet"
    assert workload.labels == {"app": "nvidia-device-plugin-daemonset"}
    assert workload.images == {
        "toolkit-validation": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.2",
        "nvidia-device-plugin": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
    }
    # Template metadata is outside spec.template.spec: relabelling pods is not drift.
    relabelled = yaml.safe_load(yaml.safe_dump(ds))
    relabelled["spec"]["template"]["metadata"]["labels"] = {"app": "y"}
    upgraded = yaml.safe_load(yaml.safe_dump(ds))
    upgraded["spec"]["template"]["spec"]["containers"][0]["image"] = (
        "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
    )
    assert normalise([relabelled]).workloads[0].spec_hash == workload.spec_hash
    assert normalise([upgraded]).workloads[0].spec_hash != workload.spec_hash


def test_service_ports_type_and_selector():
    svc = {
        "kind": "Service",
        "metadata": {"name": "jupyter", "namespace": "team-alpha"},
        "spec": {
            "type": "NodePort",
            "selector": {"app": "jupyter"},
            "ports": [
                {"port": 80, "targetPort": 8888},
                {"port": 443, "targetPort": "https"},
                {"name": "x"},
            ],
        },
    }
    malformed = {**svc, "metadata": {"name": "plain", "namespace": "team-alpha"}, "spec": None}
    result, plain = normalise([svc, malformed]).services
    assert (result.name, result.type, result.selector) == (
        "jupyter",
        "NodePort",
        {"app": "jupyter"},
    )
    # A named targetPort resolves only against the pod, so the service port stands in.
    assert result.ports == (8888, 443)
    assert (plain.type, plain.selector, plain.ports) == ("ClusterIP", {}, ())


def test_roles_and_bindings():
    objects = [
        {
            "kind": "ClusterRole",
            "metadata": {
                "name": "gpu-config-editor",
                "labels": {"rbac.example.com/aggregate-to-edit": "true"},
            },
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "verbs": ["update", "patch"],
                    "resourceNames": ["time-slicing-config"],
                }
            ],
            "aggregationRule": {
                "clusterRoleSelectors": [
                    {"matchLabels": {"rbac.example.com/aggregate-to-gpu": "true"}}
                ]
            },
        },
        {
            "kind": "RoleBinding",
            "metadata": {"name": "alpha-can-edit", "namespace": "gpu-operator"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "gpu-config-editor",
            },
            "subjects": [
                {"kind": "Group", "name": "alpha-devs"},
                {"kind": "ServiceAccount", "name": "alpha-runner"},
                {"kind": "ServiceAccount", "name": "ci", "namespace": "team-alpha"},
            ],
        },
        {
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "alpha-nodes"},
            "roleRef": {"kind": "ClusterRole", "name": "node-labeler"},
            "subjects": [{"kind": "ServiceAccount", "name": "orphan"}],
        },
    ]
    snapshot = normalise(objects)
    (role,) = snapshot.roles
    assert (role.kind, role.namespace, role.labels) == (
        "ClusterRole",
        None,
        {"rbac.example.com/aggregate-to-edit": "true"},
    )
    assert role.rules[0].resource_names == ("time-slicing-config",)
    assert role.rules[0].verbs == ("update", "patch")
    assert role.aggregation_labels == ({"rbac.example.com/aggregate-to-gpu": "true"},)
    cluster_binding, binding = snapshot.bindings
    assert (binding.role_kind, binding.role_name, binding.namespace) == (
        "ClusterRole",
        "gpu-config-editor",
        "gpu-operator",
    )
    assert binding.subjects == (
        Subject("Group", "alpha-devs", None),
        Subject("ServiceAccount", "alpha-runner", "gpu-operator"),
        Subject("ServiceAccount", "ci", "team-alpha"),
    )
    assert cluster_binding.subjects == (Subject("ServiceAccount", "orphan", None),)


def test_namespaces_and_quotas():
    objects = [
        {
            "kind": "Namespace",
            "metadata": {"name": "team-alpha", "labels": {"gpuposture.io/tenant": "alpha"}},
        },
        {
            "kind": "ResourceQuota",
            "metadata": {"name": "gpu-quota", "namespace": "team-alpha"},
            "spec": {"hard": {"requests.nvidia.com/gpu": 4, "limits.memory": "256Gi"}},
        },
    ]
    snapshot = normalise(objects)
    assert snapshot.namespaces[0].labels == {"gpuposture.io/tenant": "alpha"}
    assert snapshot.quotas[0].hard == {"requests.nvidia.com/gpu": "4", "limits.memory": "256Gi"}


def _netpol(name: str, spec: dict) -> dict:
    return {
        "kind": "NetworkPolicy",
        "apiVersion": "networking.k8s.io/v1",
        "metadata": {"name": name, "namespace": "team-alpha"},
        "spec": spec,
    }


def test_network_policy_selector_expressions_and_allow_all_egress():
    expressions = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["train"]}]}
    snapshot = normalise(
        [
            _netpol("deny", {"podSelector": {}, "policyTypes": ["Egress"]}),
            _netpol("open", {"podSelector": expressions, "egress": [{}]}),
            _netpol(
                "world", {"podSelector": {}, "egress": [{"to": [{"ipBlock": {"cidr": "::/0"}}]}]}
            ),
            _netpol(
                "world-but",
                {
                    "podSelector": {},
                    "egress": [
                        {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.0.0/16"]}}]}
                    ],
                },
            ),
            _netpol("https", {"podSelector": {}, "egress": [{"ports": [{"port": 443}]}]}),
            # A port entry with no port is every port of its protocol; so is 1-65535.
            _netpol(
                "all-tcp",
                {
                    "podSelector": {},
                    "egress": [
                        {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP"}]}
                    ],
                },
            ),
            _netpol(
                "range",
                {"podSelector": {}, "egress": [{"ports": [{"port": 1, "endPort": 65535}]}]},
            ),
            _netpol(
                "high-range",
                {"podSelector": {}, "egress": [{"ports": [{"port": 1024, "endPort": 65535}]}]},
            ),
        ]
    )
    by_name = {p.name: p for p in snapshot.network_policies}
    assert {n: p.egress_allows_all for n, p in by_name.items()} == {
        "deny": False,
        "open": True,
        "world": True,
        "world-but": True,  # the internet is open, only the metadata endpoint is not
        "https": False,  # one port to anywhere: narrowed, not open
        "all-tcp": True,
        "range": True,
        "high-range": False,
    }
    assert by_name["open"].match_expressions == (
        {"key": "app", "operator": "In", "values": ["train"]},
    )
    assert not by_name["open"].selects_all_pods
    assert by_name["open"].policy_types == ("Egress", "Ingress")


def test_cni_policies_are_kept_by_kind_and_never_read_as_kubernetes_ones():
    calico = {
        "apiVersion": "projectcalico.org/v3",
        "kind": "NetworkPolicy",
        "metadata": {"name": "deny", "namespace": "team-alpha"},
        # Calico's own shape: read as a Kubernetes policy it would select every pod.
        "spec": {"selector": "all()", "types": ["Egress"], "egress": [{"action": "Deny"}]},
    }
    cilium = {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumClusterwideNetworkPolicy",
        "metadata": {"name": "no-world", "namespace": "stray"},
        "spec": {"endpointSelector": {}, "egressDeny": [{"toEntities": ["world"]}]},
    }
    kube = _netpol("deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    # The same cluster-wide policy again under another stray namespace: one object.
    again = {**cilium, "metadata": {"name": "no-world", "namespace": "other"}}
    snapshot = normalise([calico, cilium, kube, again])
    found = {(p.engine, p.namespace, p.name): p for p in snapshot.network_policies}
    assert set(found) == {
        ("", "team-alpha", "deny"),
        ("projectcalico.org/NetworkPolicy", "team-alpha", "deny"),
        ("cilium.io/CiliumClusterwideNetworkPolicy", "", "no-world"),
    }
    # The same name in two APIs is not a duplicate; the same cluster-wide object is.
    (warning,) = snapshot.warnings
    assert "CiliumClusterwideNetworkPolicy" in warning and "more than once" in warning
    # Calico's kept as Calico writes it, for K8S-007 to evaluate in Calico's order.
    calico_deny = found[("projectcalico.org/NetworkPolicy", "team-alpha", "deny")]
    assert (calico_deny.selector_expr, calico_deny.egress_steps) == ("all()", ("deny:all",))
    assert calico_deny.policy_types == ("Egress",) and not calico_deny.egress_allows_all


@pytest.mark.parametrize(
    ("api_version", "kind", "namespace"),
    [
        ("k8s.ovn.org/v1", "EgressFirewall", "team-alpha"),
        ("network.openshift.io/v1", "EgressNetworkPolicy", "team-alpha"),
        ("networking.gke.io/v1alpha1", "FQDNNetworkPolicy", "team-alpha"),
        ("policy.networking.k8s.io/v1alpha2", "ClusterNetworkPolicy", ""),
    ],
)
def test_egress_firewalls_of_other_apis_are_kept_as_unread_policies(api_version, kind, namespace):
    # OpenShift's and GKE's own egress controls restrict a namespace's egress to the internet:
    # K8S-007 must say unknown for them, not "not restricted".
    obj = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "default", "namespace": "team-alpha"},
        "spec": {"egress": [{"type": "Deny", "to": {"cidrSelector": "0.0.0.0/0"}}]},
    }
    (read,) = normalise([obj]).network_policies
    group = api_version.rpartition("/")[0]
    assert (read.engine, read.namespace) == (f"{group}/{kind}", namespace)


def test_quota_scopes_and_scope_selector():
    quota = {
        "kind": "ResourceQuota",
        "metadata": {"name": "gpu-high", "namespace": "team-alpha"},
        "spec": {
            "hard": {"requests.nvidia.com/gpu": "4"},
            "scopes": ["NotTerminating"],
            "scopeSelector": {
                "matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}
                ]
            },
        },
    }
    (read,) = normalise([quota]).quotas
    assert read.scopes == ("NotTerminating",)
    assert read.scope_selector == (
        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]},
    )


def test_gateway_routes_are_read_as_ingresses_of_their_services():
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "nb", "namespace": "team-alpha"},
        "spec": {
            "parentRefs": [{"name": "public", "namespace": "gateway"}],
            "hostnames": ["nb.example.com"],
            "rules": [
                {"backendRefs": [{"name": "nb", "port": 80}]},
                {"backendRefs": [{"name": "elsewhere", "namespace": "team-beta", "port": 80}]},
                {"backendRefs": [{"name": "bucket", "kind": "Backend", "group": "x.example"}]},
            ],
        },
    }
    ingress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "nb", "namespace": "team-alpha"},
        "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}},
    }
    snapshot = normalise([route, ingress])
    found = {(i.kind, i.name): i for i in snapshot.ingresses}
    assert set(found) == {("Ingress", "nb"), ("HTTPRoute", "nb")}
    read = found[("HTTPRoute", "nb")]
    assert (read.hosts, read.services) == (("nb.example.com",), ("nb",))


def _route(name, parent_refs, status=None, kind="HTTPRoute"):
    obj = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "team-alpha"},
        "spec": {
            "rules": [
                {
                    "backendRefs": [
                        {"name": "nb", "port": 80},
                        {"name": "nb", "namespace": "team-beta", "port": 80},
                    ]
                }
            ],
        },
    }
    if parent_refs is not None:
        obj["spec"]["parentRefs"] = parent_refs
    if status is not None:
        obj["status"] = {"parents": status}
    return obj


GATEWAY = {"name": "public", "namespace": "gateway"}


def _parent_status(**conditions):
    return [
        {
            "parentRef": GATEWAY,
            "conditions": [
                {"type": t, "status": v[0], "reason": v[1]} for t, v in conditions.items()
            ],
        }
    ]


@pytest.mark.parametrize(
    ("route", "local", "remote"),
    [
        pytest.param(_route("r", [GATEWAY]), ("nb",), ("team-beta/nb",), id="gateway"),
        pytest.param(_route("r", [GATEWAY], kind="TLSRoute"), ("nb",), ("team-beta/nb",), id="tls"),
        pytest.param(_route("r", None), (), (), id="no-parent-attaches-nowhere"),
        # GAMMA: a route whose parent is a Service routes traffic inside the mesh.
        pytest.param(
            _route("r", [{"group": "", "kind": "Service", "name": "nb"}]), (), (), id="gamma-mesh"
        ),
        pytest.param(
            _route("r", [GATEWAY], _parent_status(Accepted=("False", "NotAllowedByListeners"))),
            (),
            (),
            id="refused-by-its-gateway",
        ),
        pytest.param(
            _route(
                "r",
                [GATEWAY],
                _parent_status(
                    Accepted=("True", "Accepted"), ResolvedRefs=("False", "RefNotPermitted")
                ),
            ),
            ("nb",),
            (),
            id="cross-namespace-ref-without-grant",
        ),
    ],
)
def test_gateway_routes_reach_services_only_through_a_gateway(route, local, remote):
    (read,) = normalise([route]).ingresses
    assert (read.services, read.remote_services) == (local, remote)


def test_service_target_ports_and_external_ips_and_old_ingress_backends():
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "nb", "namespace": "team-alpha"},
        "spec": {
            "selector": {"app": "nb"},
            "externalIPs": ["203.0.113.7"],
            "ports": [
                {"port": 443, "targetPort": "proxy"},
                {"port": 80},
                {"port": 81, "targetPort": 8888},
            ],
        },
    }
    old = {
        "apiVersion": "networking.k8s.io/v1beta1",
        "kind": "Ingress",
        "metadata": {"name": "nb", "namespace": "team-alpha"},
        "spec": {
            "backend": {"serviceName": "default", "servicePort": 80},
            "rules": [{"http": {"paths": [{"backend": {"serviceName": "nb", "servicePort": 80}}]}}],
        },
    }
    snapshot = normalise([service, old])
    (read,) = snapshot.services
    assert (read.targets, read.external_ips) == (("proxy", "80", "8888"), ("203.0.113.7",))
    (ingress,) = snapshot.ingresses
    assert ingress.services == ("default", "nb")


def test_container_port_names_and_host_ports():
    raw = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nb", "namespace": "team-alpha"},
        "spec": {
            "containers": [
                {
                    "name": "nb",
                    "image": "quay.io/jupyter/base-notebook:2024-10-02",
                    "ports": [
                        {"containerPort": 8888, "name": "notebook-port", "hostPort": 30888},
                        {"containerPort": 9000},
                    ],
                }
            ]
        },
    }
    (container,) = normalise([raw]).pods[0].containers
    assert (container.named_ports, container.host_ports) == ({"notebook-port": 8888}, (30888,))


@pytest.mark.parametrize(
    ("annotations", "auth"),
    [
        (
            {"nginx.ingress.kubernetes.io/auth-url": "https://oauth2.example.com/oauth2/auth"},
            "nginx.ingress.kubernetes.io/auth-url=https://oauth2.example.com/oauth2/auth",
        ),
        (
            {"nginx.ingress.kubernetes.io/auth-type": "basic"},
            "nginx.ingress.kubernetes.io/auth-type=basic",
        ),
        (
            {"alb.ingress.kubernetes.io/auth-type": "oidc"},
            "alb.ingress.kubernetes.io/auth-type=oidc",
        ),
        ({"alb.ingress.kubernetes.io/auth-type": "none"}, ""),
        # A Traefik middleware may or may not authenticate: not counted.
        ({"traefik.ingress.kubernetes.io/router.middlewares": "auth-sso@kubernetescrd"}, ""),
        ({}, ""),
    ],
)
def test_ingress_authenticated_by_its_controller(annotations, auth):
    ingress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "nb", "namespace": "team-alpha", "annotations": annotations},
        "spec": {"defaultBackend": {"service": {"name": "nb", "port": {"number": 80}}}},
    }
    (read,) = normalise([ingress]).ingresses
    assert read.auth == auth


@pytest.mark.parametrize(
    ("annotations", "internal"),
    [
        ({"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}, True),
        ({"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"}, True),
        ({"service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing"}, False),
        ({"networking.gke.io/load-balancer-type": "Internal"}, True),
        ({"service.beta.kubernetes.io/azure-load-balancer-internal": "true"}, True),
        ({}, False),
    ],
)
def test_internal_load_balancer_annotations(annotations, internal):
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "nb", "namespace": "team-alpha", "annotations": annotations},
        "spec": {"type": "LoadBalancer", "selector": {"app": "nb"}, "ports": [{"port": 80}]},
    }
    (read,) = normalise([service]).services
    assert bool(read.internal_lb) is internal


def test_openshift_routes_are_read_as_ingresses_of_their_services():
    route = {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "nb", "namespace": "team-alpha"},
        "spec": {
            "host": "nb-team-alpha.apps.example.com",
            "to": {"kind": "Service", "name": "nb", "weight": 100},
            "alternateBackends": [{"kind": "Service", "name": "nb-canary", "weight": 10}],
            "tls": {"termination": "edge"},
        },
    }
    (read,) = normalise([route]).ingresses
    assert (read.kind, read.hosts, read.services) == (
        "Route",
        ("nb-team-alpha.apps.example.com",),
        ("nb", "nb-canary"),
    )


def test_traefik_ingress_routes_are_read_as_ingresses_of_their_services():
    route = {
        "apiVersion": "traefik.io/v1alpha1",
        "kind": "IngressRoute",
        "metadata": {"name": "nb", "namespace": "team-alpha"},
        "spec": {
            "entryPoints": ["websecure"],
            "routes": [
                {
                    "match": "Host(`nb.example.com`)",
                    "kind": "Rule",
                    "services": [
                        {"name": "nb", "port": 80},
                        {"name": "shared", "namespace": "team-beta", "port": 80},
                        {"name": "weighted", "kind": "TraefikService"},
                    ],
                }
            ],
        },
    }
    (read,) = normalise([route]).ingresses
    assert (read.kind, read.services, read.remote_services) == (
        "IngressRoute",
        ("nb",),
        ("team-beta/shared",),
    )


def _cilium(spec, kind="CiliumNetworkPolicy", namespace="team-alpha", specs=None):
    obj = {
        "apiVersion": "cilium.io/v2",
        "kind": kind,
        "metadata": {"name": "p", "namespace": namespace},
    }
    if spec is not None:
        obj["spec"] = spec
    if specs is not None:
        obj["specs"] = specs
    return obj


DENY_WORLD = {"egressDeny": [{"toEntities": ["world"]}]}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (_cilium({"endpointSelector": {}, **DENY_WORLD}), ({}, True)),
        (
            _cilium({"endpointSelector": {"matchLabels": {"k8s:app": "train"}}, **DENY_WORLD}),
            ({"app": "train"}, True),
        ),
        (
            _cilium(
                {
                    "endpointSelector": {
                        "matchLabels": {"k8s:io.kubernetes.pod.namespace": "team-alpha"}
                    },
                    "egressDeny": [{"toEntities": ["all"]}],
                },
                kind="CiliumClusterwideNetworkPolicy",
                namespace=None,
            ),
            ({"io.kubernetes.pod.namespace": "team-alpha"}, True),
        ),
        # Only some ports denied, an allow rule, a node (host) policy, a service-account
        # selector, two denying rules: not evaluated.
        (
            _cilium(
                {
                    "endpointSelector": {},
                    "egressDeny": [
                        {"toEntities": ["world"], "toPorts": [{"ports": [{"port": "25"}]}]}
                    ],
                }
            ),
            ({}, False),
        ),
        (_cilium({"endpointSelector": {}, "egress": [{"toEntities": ["world"]}]}), ({}, False)),
        (_cilium({"nodeSelector": {}, **DENY_WORLD}), ({}, False)),
        (
            _cilium(
                {
                    "endpointSelector": {
                        "matchLabels": {"io.cilium.k8s.policy.serviceaccount": "runner"}
                    },
                    **DENY_WORLD,
                }
            ),
            ({}, False),
        ),
        (
            _cilium(
                None,
                specs=[
                    {"endpointSelector": {"matchLabels": {"app": "a"}}, **DENY_WORLD},
                    {"endpointSelector": {"matchLabels": {"app": "a"}}, **DENY_WORLD},
                ],
            ),
            ({}, False),
        ),
    ],
)
def test_cilium_world_deny_is_read(obj, expected):
    if obj["metadata"]["namespace"] is None:
        del obj["metadata"]["namespace"]
    (read,) = normalise([obj]).network_policies
    assert (read.pod_selector, read.egress_denies_world) == expected


def test_cilium_world_denies_of_specs_for_different_pods_are_each_read():
    obj = _cilium(
        None,
        specs=[
            {"endpointSelector": {"matchLabels": {"app": "a"}}, **DENY_WORLD},
            {"endpointSelector": {"matchLabels": {"app": "b"}}, **DENY_WORLD},
        ],
    )
    read = normalise([obj]).network_policies
    assert [(p.pod_selector, p.egress_denies_world) for p in read] == [
        ({"app": "a"}, True),
        ({"app": "b"}, True),
    ]
