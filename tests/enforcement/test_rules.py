"""Every rule of the pack, in both dialects: a pod that must be denied and one that must pass,
judged by cel-python with the expressions read back from the generated objects."""

from __future__ import annotations

from dataclasses import replace

import pytest

from enforcement.cel import judge
from enforcement.pod_object import pod_object
from enforcement.preview import pack_rules
from enforcement.rules import NODE_RULE, POD_RULES
from inventory.sources.pods import pod_from_object
from posture.exemptions import Exemption
from tests.enforcement.packs import (
    INPUTS,
    KEY,
    POOL_TOLERATION,
    VISIBLE,
    container,
    pack,
    pod,
    pooled,
)

DIALECTS = ("vap", "kyverno")


def denied_by(dialect: str, obj: dict) -> set[str]:
    """The rules of the generated pack that deny `obj` in its namespace."""
    rules, _ = pack_rules(pack(dialect))
    out = set()
    for rule in rules:
        if obj["metadata"]["namespace"] not in rule.namespaces:
            continue
        for expression, _message in rule.expressions:
            verdict = judge(
                variables=rule.variables,
                conditions=rule.conditions,
                expression=expression,
                obj=obj,
                params=rule.params,
            )
            assert verdict is None or not verdict.error, verdict
            if verdict is not None and not verdict.admitted:
                out.add(rule.rule)
    return out


# The Network Operator's NICs under NVIDIA's prefix: an SR-IOV VF with RDMA, a host device.
NIC_ONLY = {"limits": {"nvidia.com/mlnx_sriov_rdma": "1"}}
HOSTDEV = "nvidia.com/hostdev"

# (rule, a pod it must deny, a near-identical pod it must admit)
CASES = [
    (
        "no-privileged",
        pod(containers=container(securityContext={"privileged": True})),
        pod(containers=container(securityContext={"privileged": False})),
    ),
    (
        "no-privileged",  # an init container counts too
        pod(initContainers=container(name="setup", securityContext={"privileged": True})),
        pod(initContainers=container(name="setup")),
    ),
    (
        "no-privileged",  # and a debug container (kubectl debug --profile=sysadmin)
        pod(ephemeralContainers=container(name="dbg", securityContext={"privileged": True})),
        pod(ephemeralContainers=container(name="dbg")),
    ),
    (
        "no-privileged",  # a Windows HostProcess container is a process on the node (POD-001)
        pod(containers=container(securityContext={"windowsOptions": {"hostProcess": True}})),
        pod(containers=container(securityContext={"windowsOptions": {"hostProcess": False}})),
    ),
    (
        "no-privileged",  # HostProcess set for every container by the pod's securityContext
        pod(securityContext={"windowsOptions": {"hostProcess": True}}),
        pod(securityContext={"windowsOptions": {"runAsUserName": "ContainerUser"}}),
    ),
    (
        "no-privileged",
        pod(
            initContainers=container(
                name="setup", securityContext={"windowsOptions": {"hostProcess": True}}
            )
        ),
        pod(initContainers=container(name="setup", securityContext={"windowsOptions": {}})),
    ),
    (
        "no-privileged",
        pod(
            ephemeralContainers=container(
                name="dbg", securityContext={"windowsOptions": {"hostProcess": True}}
            )
        ),
        pod(ephemeralContainers=container(name="dbg", securityContext={})),
    ),
    (
        "no-sys-admin",
        pod(containers=container(securityContext={"capabilities": {"add": ["SYS_ADMIN"]}})),
        pod(containers=container(securityContext={"capabilities": {"add": ["NET_BIND_SERVICE"]}})),
    ),
    (
        "no-sys-admin",
        pod(containers=container(securityContext={"capabilities": {"add": ["cap_sys_admin"]}})),
        pod(containers=container(securityContext={"capabilities": {"add": ["CHOWN"]}})),
    ),
    (
        "no-sys-admin",
        pod(containers=container(securityContext={"capabilities": {"add": ["NET_ADMIN"]}})),
        pod(containers=container(securityContext={"capabilities": {"add": ["NET_BIND_SERVICE"]}})),
    ),
    (
        "no-sys-admin",
        pod(containers=container(securityContext={"capabilities": {"add": ["cap_sys_ptrace"]}})),
        pod(containers=container(securityContext={"capabilities": {"add": ["KILL"]}})),
    ),
    (
        "no-sys-admin",
        pod(containers=container(securityContext={"capabilities": {"add": ["ALL"]}})),
        pod(containers=container(securityContext={"capabilities": {"drop": ["ALL"]}})),
    ),
    ("no-host-namespaces", pod(hostPID=True), pod(hostPID=False)),
    ("no-host-namespaces", pod(hostIPC=True), pod(hostIPC=False)),
    ("no-host-namespaces", pod(hostNetwork=True), pod(hostNetwork=False)),
    (
        "no-host-paths",
        pod(volumes=[{"name": "d", "hostPath": {"path": "/dev/nvidia0"}}]),
        pod(volumes=[{"name": "d", "hostPath": {"path": "/data/datasets"}}]),
    ),
    (
        "no-host-paths",
        pod(volumes=[{"name": "k", "hostPath": {"path": "/var/lib/kubelet/pods"}}]),
        pod(volumes=[{"name": "k", "hostPath": {"path": "/var/lib/kubeletx"}}]),
    ),
    (
        "no-host-paths",
        pod(volumes=[{"name": "s", "hostPath": {"path": "/run/containerd/containerd.sock"}}]),
        pod(volumes=[{"name": "s", "hostPath": {"path": "/opt/models"}}]),
    ),
    (
        "no-host-paths",  # a parent of /dev reaches it
        pod(volumes=[{"name": "root", "hostPath": {"path": "/"}}]),
        pod(volumes=[{"name": "root", "emptyDir": {}}]),
    ),
    (
        "no-visible-devices-without-gpu",
        pod(containers=container(resources={}, env=[{"name": VISIBLE, "value": "all"}])),
        pod(containers=container(resources={}, env=[{"name": VISIBLE, "value": "void"}])),
    ),
    (
        "no-visible-devices-without-gpu",  # from a ConfigMap the sync saw setting it
        pod(containers=container(resources={}, envFrom=[{"configMapRef": {"name": "gpu-env"}}])),
        pod(containers=container(resources={}, envFrom=[{"configMapRef": {"name": "app-env"}}])),
    ),
    (
        # With a GPU limit it is admitted: whether `all` replaces the GPUs the plugin allocated
        # depends on the node's device-list strategy, which admission does not know (POD-011
        # judges it after scheduling). A request alone allocates nothing.
        "no-visible-devices-without-gpu",
        pod(
            containers=container(
                resources={"requests": {"nvidia.com/gpu": "1"}},
                env=[{"name": VISIBLE, "value": "all"}],
            )
        ),
        pod(containers=container(env=[{"name": VISIBLE, "value": "all"}])),
    ),
    (
        "no-visible-devices-without-gpu",  # a limit of zero GPUs allocates none
        pod(
            containers=container(
                resources={"limits": {"nvidia.com/gpu": "0"}},
                env=[{"name": VISIBLE, "value": "all"}],
            )
        ),
        pod(
            containers=container(
                resources={"limits": {"nvidia.com/gpu": "1"}},
                env=[{"name": VISIBLE, "value": "all"}],
            )
        ),
    ),
    (
        "no-visible-devices-without-gpu",  # the Network Operator's NIC is not a GPU
        pod(
            containers=container(
                resources={"limits": {"nvidia.com/hostdev": "1"}},
                env=[{"name": VISIBLE, "value": "all"}],
            )
        ),
        pod(
            containers=container(
                resources={"limits": {"nvidia.com/hostdev": "1", "nvidia.com/gpu": "1"}},
                env=[{"name": VISIBLE, "value": "all"}],
            )
        ),
    ),
    (
        "no-visible-devices-without-gpu",  # off in any case and padding, as POD-011 reads it
        pod(containers=container(resources={}, env=[{"name": VISIBLE, "value": "voided"}])),
        pod(containers=container(resources={}, env=[{"name": VISIBLE, "value": " VOID "}])),
    ),
    (
        "no-visible-devices-without-gpu",
        pod(containers=container(resources={}, env=[{"name": VISIBLE, "value": "0"}])),
        pod(containers=container(resources={}, env=[{"name": VISIBLE, "value": "None"}])),
    ),
    (
        "no-visible-devices-without-gpu",  # a DRA claim: its CDI edits set the variable to void
        pod(containers=container(resources={}, env=[{"name": VISIBLE, "value": "0"}])),
        pod(
            containers=container(
                resources={"claims": [{"name": "gpu"}]}, env=[{"name": VISIBLE, "value": "0"}]
            ),
            resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        ),
    ),
    (
        "no-visible-devices-without-gpu",  # from a ConfigMap key admission cannot read
        pod(
            containers=container(
                resources={},
                env=[
                    {
                        "name": VISIBLE,
                        "valueFrom": {"configMapKeyRef": {"name": "app-env", "key": "gpus"}},
                    }
                ],
            )
        ),
        pod(containers=container(resources={}, env=[{"name": VISIBLE, "value": "none"}])),
    ),
    (
        "class-pool-placement",  # a GPU pod through the variable, let in by a POD-011 exemption
        pod(
            "secure-ml", containers=container(resources={}, env=[{"name": VISIBLE, "value": "all"}])
        ),
        pooled(containers=container(resources={}, env=[{"name": VISIBLE, "value": "all"}])),
    ),
    (
        "gpu-requests-equal-limits",
        pod(
            containers=container(
                resources={"requests": {"nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "1"}}
            )
        ),
        pod(containers=container(resources={"limits": {"nvidia.com/gpu": "2"}})),
    ),
    ("class-pool-placement", pod("secure-ml"), pooled()),
    (
        "class-pool-placement",  # a NIC under NVIDIA's prefix (an SR-IOV VF) is no GPU pod
        pod("secure-ml"),
        pod("secure-ml", containers=container(resources=NIC_ONLY)),
    ),
    (
        "class-pool-placement",  # nor is the Network Operator's host device, requested only
        pod("secure-ml"),
        pod("secure-ml", containers=container(resources={"requests": {HOSTDEV: "1"}})),
    ),
    (
        "class-pool-placement",  # the toleration without the nodeSelector is not enough
        pod("secure-ml", tolerations=[{"key": KEY, "operator": "Equal", "value": "sensitive"}]),
        pooled(),
    ),
    (
        "no-foreign-pool-tolerations",
        pod(tolerations=[POOL_TOLERATION]),
        pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]),
    ),
    (
        "no-foreign-pool-tolerations",
        pod(tolerations=[{"operator": "Exists"}]),
        pod(tolerations=[{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]),
    ),
    (
        "no-foreign-pool-tolerations",
        pod(tolerations=[{"key": KEY, "operator": "Exists"}]),
        pod(tolerations=[]),
    ),
    (
        "approved-sharing-modes",  # time-slicing replicas, no time-slicing approval for alpha
        pod(containers=container(resources={"limits": {"nvidia.com/gpu.shared": "1"}})),
        pod(containers=container(resources={"limits": {"nvidia.com/mig-1c.3g.40gb": "1"}})),
    ),
    (
        "approved-sharing-modes",  # a renamed time-slicing resource of this cluster
        pod(containers=container(resources={"limits": {"nvidia.com/gpu-ts": "1"}})),
        pod(containers=container(resources={"limits": {"nvidia.com/mig-3g.40gb": "1"}})),
    ),
    (
        "approved-sharing-modes",  # HAMi's memory share
        pod(containers=container(resources={"limits": {"nvidia.com/gpumem": "3000"}})),
        pod(),
    ),
    (
        "approved-sharing-modes",  # a KAI fraction
        pod(containers=container(resources={}), metadata=None)
        | {
            "metadata": {
                "name": "frac",
                "namespace": "team-alpha",
                "annotations": {"gpu-fraction": "0.5"},
            }
        },
        pod(),
    ),
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("rule", "bad", "good"), CASES)
def test_rule_denies_the_bad_pod_and_admits_the_good_one(dialect, rule, bad, good):
    assert rule in denied_by(dialect, bad)
    assert rule not in denied_by(dialect, good)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_clean_pod_passes_every_rule_in_both_namespaces(dialect):
    assert denied_by(dialect, pod()) == set()
    assert denied_by(dialect, pooled()) == set()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_approvals_differ_per_tenant(dialect):
    # secure holds a time-slicing approval, alpha does not (the pack reads their ConfigMaps).
    shared = {"limits": {"nvidia.com/gpu.shared": "1"}}
    assert "approved-sharing-modes" not in denied_by(
        dialect, pooled(containers=container(resources=shared))
    )
    assert "approved-sharing-modes" in denied_by(
        dialect, pod(containers=container(resources=shared))
    )
    mig_ci = {"limits": {"nvidia.com/mig-1c.3g.40gb": "1"}}
    assert "approved-sharing-modes" in denied_by(
        dialect, pooled(containers=container(resources=mig_ci))
    )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_exemption_keeps_its_workload_out_of_the_rule(dialect):
    dev = [{"name": "d", "hostPath": {"path": "/dev"}}]
    assert "no-host-paths" not in denied_by(dialect, pod(name="log-agent-x2k4p", volumes=dev))
    assert "no-host-paths" in denied_by(dialect, pod(name="trainer", volumes=dev))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_platform_and_unknown_namespaces_are_not_bound(dialect):
    assert denied_by(dialect, pod("kube-system", hostPID=True)) == set()


def node(labels: dict, taints: list) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "gpu-1", "labels": labels},
        "spec": {"taints": taints},
    }


def node_verdict(dialect: str, old: dict, new: dict, user: dict):
    objects = pack(dialect)
    params = next(o for o in objects if o["metadata"]["name"] == "gpuposture-principals")
    expression = next(
        o["spec"]["validations"][0]["expression"]
        if dialect == "vap"
        else o["spec"]["rules"][0]["validate"]["cel"]["expressions"][0]["expression"]
        for o in objects
        if o["metadata"]["annotations"]["gpuposture.io/checks"] == NODE_RULE.check
        and o["kind"] in ("ValidatingAdmissionPolicy", "ClusterPolicy")
    )
    assert expression == NODE_RULE.expression
    data = {"data": params["data"]}
    return judge(
        variables=(),
        conditions=(),
        expression=expression,
        obj=new,
        old_obj=old,
        params=data,
        request={"userInfo": user},
    )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_tenant_principals_may_not_relabel_or_untaint_nodes(dialect):
    taint = [{"key": KEY, "value": "sensitive", "effect": "NoSchedule"}]
    old = node({KEY: "sensitive"}, taint)
    relabelled = node({KEY: "internal"}, taint)
    untainted = node({KEY: "sensitive"}, [])
    annotated = node({KEY: "sensitive"}, taint) | {"status": {"phase": "Running"}}
    dev = {"username": "bob", "groups": ["alpha-devs", "system:authenticated"]}
    robot = {
        "username": "system:serviceaccount:team-alpha:ci",
        "groups": ["system:serviceaccounts:team-alpha"],
    }
    ops = {"username": "ops-automation", "groups": ["platform"]}
    assert not node_verdict(dialect, old, relabelled, dev).admitted
    assert not node_verdict(dialect, old, untainted, {"username": "ana@example.com"}).admitted
    assert not node_verdict(dialect, old, relabelled, robot).admitted
    assert node_verdict(dialect, old, annotated, dev).admitted  # labels and taints unchanged
    assert node_verdict(dialect, old, relabelled, ops).admitted


def test_every_pod_rule_has_a_case():
    assert {r.id for r in POD_RULES} == {rule for rule, _, _ in CASES}


def claim_verdict(dialect: str, rule_id: str, obj: dict):
    """Judge a DRA claim (or template) with the rule's expression from the generated pack."""
    expressions = []
    for o in pack(dialect):
        if dialect == "vap" and o["kind"] == "ValidatingAdmissionPolicy":
            if o["metadata"]["name"] == f"gpuposture-{rule_id}":
                expressions.append(o["spec"]["validations"][0]["expression"])
        elif dialect == "kyverno" and o["kind"] == "ClusterPolicy":
            expressions += [
                r["validate"]["cel"]["expressions"][0]["expression"]
                for r in o["spec"]["rules"]
                if r["name"] == rule_id
            ]
    assert expressions and len(set(expressions)) == 1
    return judge(variables=(), conditions=(), expression=expressions[0], obj=obj)


def devices(admin: bool | None) -> dict:
    exactly = {"deviceClassName": "gpu.nvidia.com"}
    if admin is not None:
        exactly["adminAccess"] = admin
    return {"requests": [{"name": "gpu", "exactly": exactly}]}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_dra_admin_access_is_denied_in_claims_and_templates(dialect):
    def claim(admin):
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "team-alpha"},
            "spec": {"devices": devices(admin)},
        }

    def template(admin):
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "team-alpha"},
            "spec": {"spec": {"devices": devices(admin)}},
        }

    assert not claim_verdict(dialect, "no-dra-admin-access", claim(True)).admitted
    assert claim_verdict(dialect, "no-dra-admin-access", claim(False)).admitted
    assert claim_verdict(dialect, "no-dra-admin-access", claim(None)).admitted
    rule = "no-dra-admin-access-templates"
    assert not claim_verdict(dialect, rule, template(True)).admitted
    assert claim_verdict(dialect, rule, template(None)).admitted


@pytest.mark.parametrize(("rule", "bad", "good"), CASES)
def test_the_stored_pod_is_judged_as_the_submitted_one(rule, bad, good):
    """The preview judges pods as the sync stored them (normalised, then rebuilt): every field
    a rule reads must survive, so both verdicts agree with admission's on the real object."""
    for raw in (bad, good):
        stored = pod_from_object(raw, raw["metadata"]["namespace"])
        assert denied_by("vap", pod_object(stored)) == denied_by("vap", raw)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_many_exemptions_fit_the_api_servers_limit_of_match_conditions(dialect):
    many = tuple(
        Exemption(id=100 + i, check_id="POD-002", namespace="team-alpha", name=f"agent-{i}")
        for i in range(70)
    )
    inputs = replace(INPUTS, exemptions=INPUTS.exemptions + many)
    rules, _ = pack_rules(pack(dialect, inputs=inputs))
    (host,) = [r for r in rules if r.rule == "no-host-namespaces" and "team-alpha" in r.namespaces]
    assert len(host.conditions) == 1
    for name, exempt in (("agent-69-x7", True), ("agent-0", True), ("trainer", False)):
        verdict = judge(
            variables=host.variables,
            conditions=host.conditions,
            expression=host.expressions[0][0],
            obj=pod(name=name, hostPID=True),
            params=host.params,
        )
        assert (verdict is None) == exempt, name
