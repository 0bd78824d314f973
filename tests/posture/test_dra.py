"""Dynamic Resource Allocation (issue 17 item 4): GPUs held through ResourceClaims are judged
like any other way a GPU reaches a pod (SHARE-*, K8S-001), and DRA-001 finds admin access
within a tenant's reach. Objects as `kubectl get -o json` prints them (resource.k8s.io/v1)."""

from __future__ import annotations

import copy

from inventory.dra_devices import DraIndex, dra_held
from tests.posture.builders import tenant
from tests.posture.dra_world import (
    DRIVER,
    claim,
    claim_template,
    device_class,
    dra_pod,
    mig_device,
    resource_slice,
)
from tests.posture.gpu_access_world import UUIDS, namespace, node, run, world
from tests.posture.test_rules_cross_tenant import binding, cluster_role, role

ALPHA, BETA = tenant("alpha", "internal_trusted"), tenant("beta", "internal_trusted")
TENANTS = (ALPHA, BETA)


def _cluster(*objects: dict) -> list[dict]:
    return [
        namespace("alpha"),
        namespace("beta"),
        node("gpu-a", gpus=4),
        device_class(),
        resource_slice("gpu-a"),
        *objects,
    ]


def _two_tenants_on(devices_a: list[str], devices_b: list[str], sharing: str | None) -> list:
    return _cluster(
        claim("alpha", "train-gpu", devices_a, sharing=sharing, reserved_for=["train-0"]),
        claim("beta", "infer-gpu", devices_b, sharing=sharing, reserved_for=["infer-0"]),
        dra_pod("alpha", "train-0", "train-gpu"),
        dra_pod("beta", "infer-0", "infer-gpu"),
    )


def test_a_time_sliced_gpu_shared_by_two_tenants_claims_is_co_tenancy():
    inputs = world(_two_tenants_on(["gpu-0"], ["gpu-0"], "TimeSlicing"), TENANTS)
    (draft,) = run("SHARE-001", inputs)
    assert draft.tenants == ("alpha", "beta")
    (where,) = draft.evidence["nodes"]
    assert where["co_residence"] == "certain"
    assert UUIDS[0] in where["co_residence_reason"]
    # Each tenant uses time-slicing without an approval.
    approvals = run("SHARE-004", inputs)
    assert sorted(d.tenants for d in approvals) == [("alpha",), ("beta",)]
    assert {d.evidence["observed_mode"] for d in approvals} == {"time_slicing"}


def test_co_tenancy_evidence_names_each_claim_with_its_namespace():
    """A claim is a namespaced object: named "<namespace>/<name>", it says whose it is, and a
    tenant viewer's redaction hides another tenant's claim with its namespace."""
    inputs = world(_two_tenants_on(["gpu-0"], ["gpu-0"], "TimeSlicing"), TENANTS)
    for check_id in ("SHARE-001", "ATTR-002"):
        (draft,) = run(check_id, inputs)
        text = str(draft.evidence)
        assert "resourceclaim/alpha/train-gpu" in text and "resourceclaim/beta/infer-gpu" in text
        assert "ResourceClaim beta/infer-gpu: gpu.nvidia.com gpu-a/gpu-0;" in text
        assert "resourceclaim/infer-gpu" not in text and "ResourceClaim infer-gpu" not in text
    (draft,) = run("SHARE-001", inputs)
    held = {party["party"]: party["pods"] for party in draft.evidence["parties"]}
    assert [p["resource"] for p in held["alpha"]] == ["resourceclaim/alpha/train-gpu"]
    assert [p["mode_basis"] for p in held["beta"]] == [
        "ResourceClaim beta/infer-gpu: gpu.nvidia.com gpu-a/gpu-0; "
        "DRA GpuConfig of the claim: sharing TimeSlicing"
    ]


def test_a_claims_name_is_evidence_not_part_of_a_findings_identity():
    """How claims are named (or spelled in evidence) must not move a finding: its identity
    (hence its fingerprint, first-seen and acceptance) is the pool and the pair of tenants."""

    def drafts(alpha_claim: str, beta_claim: str) -> dict:
        objects = _cluster(
            claim("alpha", alpha_claim, ["gpu-0"], sharing="TimeSlicing", reserved_for=["t-0"]),
            claim("beta", beta_claim, ["gpu-0"], sharing="TimeSlicing", reserved_for=["i-0"]),
            dra_pod("alpha", "t-0", alpha_claim),
            dra_pod("beta", "i-0", beta_claim),
        )
        inputs = world(objects, TENANTS)
        return {c: run(c, inputs) for c in ("SHARE-001", "SHARE-004", "ATTR-002")}

    first, renamed = drafts("train-gpu", "infer-gpu"), drafts("gpu", "rag-ts-gpu")
    for check_id, found in first.items():
        assert found, check_id
        assert [d.identity() for d in found] == [d.identity() for d in renamed[check_id]]
    assert first["SHARE-001"][0].evidence != renamed["SHARE-001"][0].evidence


def test_claims_on_different_gpus_do_not_meet():
    inputs = world(_two_tenants_on(["gpu-0"], ["gpu-1"], "TimeSlicing"), TENANTS)
    assert run("SHARE-001", inputs) == []


def test_whole_gpus_allocated_by_dra_are_exclusive():
    inputs = world(_two_tenants_on(["gpu-0"], ["gpu-1"], None), TENANTS)
    assert run("SHARE-001", inputs) == []
    assert run("SHARE-004", inputs) == []


def test_one_device_allocated_to_two_claims_without_config_is_shared():
    """Two claims holding one device (the driver allows it when sharing is configured on
    the class, or by adminAccess): the parties meet on it with no isolation."""
    inputs = world(_two_tenants_on(["gpu-2"], ["gpu-2"], None), TENANTS)
    (draft,) = run("SHARE-001", inputs)
    assert draft.tenants == ("alpha", "beta")


def test_mps_sharing_from_the_claims_config_is_mps():
    inputs = world(_two_tenants_on(["gpu-0"], ["gpu-0"], "MPS"), TENANTS)
    assert run("SHARE-001", inputs) == []
    (draft,) = run("SHARE-006", inputs)
    assert draft.tenants == ("alpha", "beta")


def test_sharing_set_by_the_device_class_config_applies():
    objects = _two_tenants_on(["gpu-0"], ["gpu-0"], None)
    shared_class = device_class(
        config=[
            {
                "opaque": {
                    "driver": DRIVER,
                    "parameters": {
                        "apiVersion": "resource.nvidia.com/v1beta1",
                        "kind": "GpuConfig",
                        "sharing": {"strategy": "MPS"},
                    },
                }
            }
        ]
    )
    objects = [shared_class if o["kind"] == "DeviceClass" else o for o in objects]
    inputs = world(objects, TENANTS)
    (draft,) = run("SHARE-006", inputs)
    assert draft.tenants == ("alpha", "beta")


def test_a_claim_generated_from_a_template_is_found_through_the_pod_status():
    inputs = world(
        _cluster(
            claim_template("alpha", "one-gpu"),
            claim_template("beta", "one-gpu"),
            claim(
                "alpha",
                "train-0-gpu-7xq2p",
                ["gpu-3"],
                sharing="TimeSlicing",
                reserved_for=["train-0"],
                owner_pod="train-0",
            ),
            claim(
                "beta",
                "infer-0-gpu-k2m9v",
                ["gpu-3"],
                sharing="TimeSlicing",
                reserved_for=["infer-0"],
                owner_pod="infer-0",
            ),
            dra_pod("alpha", "train-0", template="one-gpu", generated="train-0-gpu-7xq2p"),
            # The status not written yet: the claim the pod owns is found by its owner.
            dra_pod("beta", "infer-0", template="one-gpu"),
        ),
        TENANTS,
    )
    (draft,) = run("SHARE-001", inputs)
    assert draft.tenants == ("alpha", "beta")


def test_one_claim_used_by_pods_of_one_tenant_is_not_co_tenancy():
    inputs = world(
        _cluster(
            claim("alpha", "shared-gpu", ["gpu-0"], reserved_for=["a-0", "a-1"]),
            dra_pod("alpha", "a-0", "shared-gpu"),
            dra_pod("alpha", "a-1", "shared-gpu"),
        ),
        TENANTS,
    )
    assert run("SHARE-001", inputs) == []
    # The two pods run on one GPU at once: time-slicing within the tenant, not a whole GPU.
    (approval,) = run("SHARE-004", inputs)
    assert (approval.tenants, approval.evidence["observed_mode"]) == (("alpha",), "time_slicing")
    assert run("ATTR-002", inputs)


def test_a_claim_shared_by_a_tenant_and_the_platform_is_a_pair():
    """A claim is namespaced, but pods of another party may name it where they run together:
    a platform pod in the tenant's claim's devices meets the tenant on it (SHARE-003 judges
    platform pairs by the tenant's class)."""
    inputs = world(
        _cluster(
            namespace("monitoring"),
            claim("alpha", "train-gpu", ["gpu-1"], sharing="TimeSlicing", reserved_for=["t"]),
            claim("monitoring", "probe", ["gpu-1"], sharing="TimeSlicing", reserved_for=["p"]),
            dra_pod("alpha", "t", "train-gpu"),
            dra_pod("monitoring", "p", "probe"),
        ),
        TENANTS,
    )
    drafts = run("SHARE-003", inputs)
    assert any("alpha" in d.tenants for d in drafts)


def test_mig_devices_from_dra_are_their_own_instances():
    mig_a = "MIG-1f0c1ad4-8f2b-5e44-9d11-7c2a63b0e111"
    mig_b = "MIG-2a7d9e10-4b3c-5d2e-8f19-0a1b2c3d4e22"
    objects = _cluster(
        resource_slice("gpu-m", [mig_device(0, "1g.5gb", mig_a), mig_device(0, "2g.10gb", mig_b)]),
        node("gpu-m", gpus=1),
        claim("alpha", "a", ["gpu-0-mig-1g.5gb-0"], node="gpu-m", reserved_for=["a-0"]),
        claim("beta", "b", ["gpu-0-mig-2g.10gb-0"], node="gpu-m", reserved_for=["b-0"]),
        dra_pod("alpha", "a-0", "a", node_name="gpu-m"),
        dra_pod("beta", "b-0", "b", node_name="gpu-m"),
    )
    inputs = world(objects, TENANTS)
    for check_id in ("SHARE-001", "SHARE-002", "SHARE-006"):
        assert run(check_id, inputs) == [], check_id
    # Each is a GPU instance of its own: the mode approvals are asked for, as with the plugin.
    approvals = run("SHARE-004", inputs)
    assert {(d.tenants, d.evidence["observed_mode"]) for d in approvals} == {
        (("alpha",), "mig_gi"),
        (("beta",), "mig_gi"),
    }


# --- DRA-001 -----------------------------------------------------------------------------------


def test_an_admin_access_claim_in_a_tenant_namespace_is_critical():
    inputs = world(
        _two_tenants_on(["gpu-0"], ["gpu-1"], None)
        + [
            claim("alpha", "peek", ["gpu-1"], admin=True, reserved_for=["peeker"]),
            dra_pod("alpha", "peeker", "peek"),
        ],
        TENANTS,
    )
    (draft,) = run("DRA-001", inputs)
    assert (draft.subject_kind, draft.subject_namespace, draft.subject_name) == (
        "ResourceClaim",
        "alpha",
        "peek",
    )
    assert draft.tenants == ("alpha",)
    assert draft.title == "ResourceClaim alpha/peek of tenant alpha asks for DRA adminAccess"
    (reached,) = draft.evidence["devices_reached"]
    assert reached["device"] == UUIDS[1]
    assert reached["other_claims"] == ["beta/infer-gpu"]
    # The admin claim meets beta on gpu-1: co-tenancy without isolation.
    (pair,) = run("SHARE-001", inputs)
    assert pair.tenants == ("alpha", "beta")


def monitoring_world(**labels: str):
    return world(
        _two_tenants_on(["gpu-0"], ["gpu-1"], None)
        + [
            namespace(
                "gpu-monitoring", **{"resource.kubernetes.io/admin-access": "true"}, **labels
            ),
            claim("gpu-monitoring", "dcgm", ["gpu-1"], admin=True, reserved_for=["dcgm-0"]),
            claim_template("alpha", "one-gpu"),
        ],
        TENANTS,
    )


def test_admin_access_in_platform_namespaces_and_plain_claims_are_quiet():
    assert run("DRA-001", monitoring_world(**{"gpuposture.io/platform": "true"})) == []


def test_a_platform_monitoring_admin_claim_leaves_tenants_whole_gpus_whole():
    """Kubernetes made adminAccess for monitoring agents: a platform DCGM claim reaching every
    GPU (allocationMode All) is the platform's reach, as DCGM-Exporter's is under the device
    plugin. A tenant's claim still holds its GPU whole: no time-slicing, no pair to judge."""
    objects = _two_tenants_on(["gpu-0"], ["gpu-1"], None) + [
        namespace("gpu-monitoring", **{"gpuposture.io/platform": "true"}),
        claim("gpu-monitoring", "dcgm", [f"gpu-{i}" for i in range(4)], admin=True),
        dra_pod("gpu-monitoring", "dcgm-0", "dcgm"),
    ]
    objects[-2]["status"]["reservedFor"] = [{"resource": "pods", "name": "dcgm-0", "uid": "u"}]
    inputs = world(objects, TENANTS)
    for check_id in ("SHARE-001", "SHARE-003", "SHARE-004", "ATTR-002"):
        assert run(check_id, inputs) == [], check_id
    index = DraIndex(inputs.snapshot, inputs.platform_namespaces)
    (held,) = index.held_devices(index.claims[("alpha", "train-gpu")])
    assert held.mode == "exclusive"
    assert "platform's adminAccess claim gpu-monitoring/dcgm" in held.basis


def test_a_platform_monitoring_admin_claim_is_no_party_on_a_time_sliced_claim():
    """A tenant time-slicing its own claim among its pods is not sharing with the platform's
    monitoring agent that reaches the GPU by adminAccess: no SHARE-003 pair with the platform."""
    inputs = world(
        _cluster(
            namespace("gpu-monitoring", **{"gpuposture.io/platform": "true"}),
            claim("beta", "infer", ["gpu-2"], sharing="TimeSlicing", reserved_for=["i-0", "i-1"]),
            dra_pod("beta", "i-0", "infer"),
            dra_pod("beta", "i-1", "infer"),
            claim("gpu-monitoring", "dcgm", ["gpu-2"], admin=True, reserved_for=["dcgm-0"]),
            dra_pod("gpu-monitoring", "dcgm-0", "dcgm"),
        ),
        (ALPHA, tenant("beta", "external")),
    )
    assert run("SHARE-003", inputs) == []
    (approval,) = run("SHARE-004", inputs)  # beta's own time-slicing still needs approval
    assert approval.tenants == ("beta",)


def test_a_tenants_admin_claim_meets_the_holder_whatever_its_sharing_config():
    """adminAccess gives no isolation: the holder's own MPS config does not set the pair
    apart from the tenant that reaches its GPU (both are judged time-slicing, so they meet)."""
    inputs = world(
        _cluster(
            claim("alpha", "train-gpu", ["gpu-0"], sharing="MPS", reserved_for=["train-0"]),
            dra_pod("alpha", "train-0", "train-gpu"),
            claim("beta", "peek", ["gpu-0"], admin=True, reserved_for=["peeker"]),
            dra_pod("beta", "peeker", "peek"),
        ),
        TENANTS,
    )
    (pair,) = run("SHARE-001", inputs)
    assert pair.tenants == ("alpha", "beta")
    index = DraIndex(inputs.snapshot, inputs.platform_namespaces)
    (held,) = index.held_devices(index.claims[("alpha", "train-gpu")])
    # Counted, not named: alpha sees this basis, and the claim is beta's.
    assert held.basis == "DRA: reached by 1 other claim(s) with adminAccess: no isolation"


def test_only_the_tenant_reaching_a_device_by_admin_access_uses_a_mode_unapproved():
    """beta holds gpu-1 whole; alpha's adminAccess claim reaches it. The pair is co-tenancy
    without isolation, but beta chose no sharing mode and no approval of beta's could end it:
    SHARE-004 is alpha's, whose claim time-shares the device (as an env bypasser's is)."""
    inputs = world(
        _two_tenants_on(["gpu-0"], ["gpu-1"], None)
        + [
            claim("alpha", "peek", ["gpu-1"], admin=True, reserved_for=["peeker"]),
            dra_pod("alpha", "peeker", "peek"),
        ],
        TENANTS,
    )
    (pair,) = run("SHARE-001", inputs)
    assert pair.tenants == ("alpha", "beta")
    (approval,) = run("SHARE-004", inputs)
    assert approval.tenants == ("alpha",)
    assert approval.evidence["observed_mode"] == "time_slicing"
    assert approval.evidence["pods"] == ["alpha/peeker"]
    index = DraIndex(inputs.snapshot, inputs.platform_namespaces)
    (held,) = index.held_devices(index.claims[("beta", "infer-gpu")])
    assert (held.mode, held.own_mode) == ("time_slicing", "exclusive")


def test_a_reached_holder_still_answers_for_the_sharing_mode_it_configured():
    """alpha's own MPS config on a device beta's adminAccess reaches: alpha's MPS needs an
    approval (its choice), beta's reach is time-slicing; neither is judged by the other's."""
    inputs = world(
        _cluster(
            claim("alpha", "train-gpu", ["gpu-0"], sharing="MPS", reserved_for=["t-0", "t-1"]),
            dra_pod("alpha", "t-0", "train-gpu"),
            dra_pod("alpha", "t-1", "train-gpu"),
            claim("beta", "peek", ["gpu-0"], admin=True, reserved_for=["peeker"]),
            dra_pod("beta", "peeker", "peek"),
        ),
        TENANTS,
    )
    found = {(d.tenants, d.evidence["observed_mode"]) for d in run("SHARE-004", inputs)}
    assert found == {(("alpha",), "mps"), (("beta",), "time_slicing")}


def test_admin_access_in_a_namespace_nobody_owns_is_judged_fail_closed():
    found = {
        (d.subject_kind, d.subject_name, d.tenants) for d in run("DRA-001", monitoring_world())
    }
    assert ("ResourceClaim", "dcgm", ("unclassified",)) in found


def test_an_admin_access_template_and_a_labelled_tenant_namespace_are_findings():
    objects = _cluster(claim_template("beta", "debug-gpu", admin=True))
    objects[1] = namespace("beta", **{"resource.kubernetes.io/admin-access": "true"})
    inputs = world(objects, TENANTS)
    found = {(d.subject_kind, d.subject_name): d for d in run("DRA-001", inputs)}
    assert set(found) == {("ResourceClaimTemplate", "debug-gpu"), ("Namespace", "beta")}
    assert found[("ResourceClaimTemplate", "debug-gpu")].evidence["namespace_admin_label"] == (
        "true"
    )


def test_a_claim_made_from_an_admin_template_is_the_templates_finding():
    inputs = world(
        _cluster(
            claim_template("alpha", "debug-gpu", admin=True),
            claim(
                "alpha",
                "dbg-0-gpu-q8w2e",
                ["gpu-0"],
                admin=True,
                reserved_for=["dbg-0"],
                owner_pod="dbg-0",
            ),
            dra_pod("alpha", "dbg-0", template="debug-gpu", generated="dbg-0-gpu-q8w2e"),
        ),
        TENANTS,
    )
    (draft,) = run("DRA-001", inputs)
    assert (draft.subject_kind, draft.subject_name) == ("ResourceClaimTemplate", "debug-gpu")


def _rbac_world(rules: list[dict]) -> list[dict]:
    return _cluster(
        cluster_role("namespace-labeler", rules),
        binding("alpha-labels", "namespace-labeler", "Group:alpha-devs", ns="alpha"),
    )


ALPHA_DEVS = tenant("alpha", "internal_trusted")
ALPHA_DEVS = type(ALPHA_DEVS)(
    ALPHA_DEVS.slug,
    ALPHA_DEVS.name,
    ALPHA_DEVS.trust_class,
    ALPHA_DEVS.namespaces,
    ("group:alpha-devs",),
)


def test_a_tenant_able_to_label_its_namespace_is_a_finding_per_binding():
    rules = [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "patch"]}]
    inputs = world(_rbac_world(rules), (ALPHA_DEVS, BETA))
    (draft,) = run("DRA-001", inputs)
    assert (draft.subject_kind, draft.subject_namespace, draft.subject_name) == (
        "RoleBinding",
        "alpha",
        "alpha-labels",
    )
    assert draft.evidence["namespaces"] == ["alpha"]
    assert draft.evidence["grants"][0]["subject"] == "Group:alpha-devs"


def test_reading_namespaces_or_labelling_another_namespace_is_not():
    read_only = [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list"]}]
    assert run("DRA-001", world(_rbac_world(read_only), (ALPHA_DEVS, BETA))) == []
    # patch on namespaces named "beta" only, bound in alpha: it reaches no namespace of alpha.
    other = [
        {
            "apiGroups": [""],
            "resources": ["namespaces"],
            "verbs": ["patch"],
            "resourceNames": ["beta"],
        }
    ]
    objects = _cluster(
        role("alpha", "labeler", other),
        binding("alpha-labels", "labeler", "Group:alpha-devs", ns="alpha", kind="Role"),
    )
    assert run("DRA-001", world(objects, (ALPHA_DEVS, BETA))) == []


def test_a_cluster_wide_labeller_is_said_to_label_every_namespace():
    """cluster-admin through a ClusterRoleBinding labels every namespace, not only the
    tenant's own that the finding counts."""
    admin = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    objects = _cluster(
        cluster_role("everything", admin),
        binding("alpha-leads-cluster-admin", "everything", "Group:alpha-devs"),
    )
    (draft,) = run("DRA-001", world(objects, (ALPHA_DEVS, BETA)))
    assert draft.title == (
        "Tenant alpha may label every namespace (including its own alpha) for DRA "
        "adminAccess through ClusterRoleBinding alpha-leads-cluster-admin"
    )
    assert draft.evidence["every_namespace"] is True
    assert draft.evidence["namespaces"] == ["alpha"]


def test_a_labeller_of_its_own_namespace_only_is_not_said_to_label_every_one():
    rules = [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["patch"]}]
    (draft,) = run("DRA-001", world(_rbac_world(rules), (ALPHA_DEVS, BETA)))
    assert draft.title.startswith("Tenant alpha may label alpha for DRA adminAccess")
    assert "every_namespace" not in draft.evidence


# --- K8S-001 -----------------------------------------------------------------------------------


def _quota(ns: str, hard: dict[str, str]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpu-quota", "namespace": ns},
        "spec": {"hard": hard},
    }


def test_k8s001_names_the_device_class_quota_a_tenants_claims_need():
    objects = _two_tenants_on(["gpu-0"], ["gpu-1"], None) + [
        _quota("alpha", {"requests.nvidia.com/gpu": "4"}),
        _quota("beta", {"gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "2"}),
    ]
    drafts = run("K8S-001", world(objects, TENANTS))
    (draft,) = drafts
    assert draft.subject_name == "alpha"
    (missing,) = draft.evidence["missing"]
    assert missing["expected_key"] == "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
    assert missing["pods"] == ["alpha/train-0"]


def test_k8s001_accepts_the_requests_form_of_the_device_class_key():
    objects = _two_tenants_on(["gpu-0"], ["gpu-1"], None) + [
        _quota(ns, {f"requests.{'gpu.nvidia.com'}.deviceclass.resource.k8s.io/devices": "2"})
        for ns in ("alpha", "beta")
    ]
    assert run("K8S-001", world(objects, TENANTS)) == []


def test_v1beta1_objects_read_the_same():
    """A cluster serving resource.k8s.io/v1beta1 (Kubernetes 1.32/1.33): the request's fields
    flat on it, a device's attributes under `basic`."""
    objects = _two_tenants_on(["gpu-0"], ["gpu-0"], "TimeSlicing")
    for obj in objects:
        if obj["kind"] in ("ResourceClaim", "ResourceSlice", "DeviceClass"):
            obj["apiVersion"] = "resource.k8s.io/v1beta1"
        if obj["kind"] == "ResourceClaim":
            for request in obj["spec"]["devices"]["requests"]:
                request.update(request.pop("exactly"))
        if obj["kind"] == "ResourceSlice":
            obj["spec"]["devices"] = [
                {"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}}
                for d in obj["spec"]["devices"]
            ]
    inputs = world(copy.deepcopy(objects), TENANTS)
    assert {c.api_version for c in inputs.snapshot.dra_claims} == {"resource.k8s.io/v1beta1"}
    (draft,) = run("SHARE-001", inputs)
    assert UUIDS[0] in draft.evidence["nodes"][0]["co_residence_reason"]


# --- a DRA pod is a GPU pod for the pool, identity and egress checks ----------------------------


def test_a_dra_gpu_pod_outside_its_pool_and_without_egress_policy_is_judged():
    ext = tenant("ext", "external")
    objects = _cluster(
        namespace("ext"),
        claim("ext", "job-gpu", ["gpu-0"], reserved_for=["job-0"]),
        dra_pod("ext", "job-0", "job-gpu"),
        # A pod with no claim at all, and one whose claim is not a GPU: neither is a GPU pod.
        {
            **dra_pod("alpha", "cpu-only", "x"),
            "spec": {"nodeName": "gpu-a", "containers": [{"name": "c", "image": "i"}]},
        },
    )
    inputs = world(objects, (ALPHA, BETA, ext))
    (placed,) = run("POD-009", inputs)
    assert placed.tenants == ("ext",)
    egress = {d.subject_name for d in run("K8S-007", inputs)}
    assert egress == {"ext"}


def test_a_pod_whose_claim_is_of_a_nic_class_is_no_gpu_pod():
    ext = tenant("ext", "external")
    nic_class = device_class("sriov-nic.example.com")
    nic_class["spec"]["selectors"][0]["cel"]["expression"] = "device.driver == 'nic.example.com'"
    nic_claim = claim("ext", "nic", None, device_class_name="sriov-nic.example.com")
    objects = _cluster(namespace("ext"), nic_class, nic_claim, dra_pod("ext", "net-0", "nic"))
    inputs = world(objects, (ALPHA, BETA, ext))
    assert run("POD-009", inputs) == []
    assert run("K8S-007", inputs) == []


def _first_available_claim(chosen: str) -> dict:
    """A v1 claim preferring a time-sliced class, else a whole GPU; `chosen` is the
    subrequest the scheduler allocated. No config applied to a whole GPU, so the status
    carries none (the allocator copies only the configs of the classes it used)."""
    obj = claim("alpha", "flex", ["gpu-2"], reserved_for=["flex-0"])
    obj["spec"]["devices"]["requests"] = [
        {
            "name": "gpu",
            "firstAvailable": [
                {"name": "shared", "deviceClassName": "shared-gpu.example.com", "count": 1},
                {"name": "whole", "deviceClassName": "gpu.nvidia.com", "count": 1},
            ],
        }
    ]
    obj["status"]["allocation"]["devices"]["results"][0]["request"] = f"gpu/{chosen}"
    return obj


def test_a_first_available_claim_takes_the_sharing_of_the_alternative_it_got():
    time_sliced = device_class(
        "shared-gpu.example.com",
        config=[
            {
                "opaque": {
                    "driver": DRIVER,
                    "parameters": {
                        "apiVersion": "resource.nvidia.com/v1beta1",
                        "kind": "GpuConfig",
                        "sharing": {"strategy": "TimeSlicing"},
                    },
                }
            }
        ],
    )
    pod = dra_pod("alpha", "flex-0", "flex")
    for chosen, mode in (("whole", "exclusive"), ("shared", "time_slicing")):
        inputs = world(_cluster(time_sliced, _first_available_claim(chosen), pod), TENANTS)
        index = DraIndex(inputs.snapshot)
        (held,) = index.held_devices(index.claims[("alpha", "flex")])
        assert held.mode == mode, chosen
    # The whole GPU it got needs no approval for time-slicing.
    whole = world(_cluster(time_sliced, _first_available_claim("whole"), pod), TENANTS)
    assert run("SHARE-004", whole) == []


def test_an_admin_access_claim_explains_no_busy_gpu():
    """ATTR-001 asks whether a scheduled workload holds a busy GPU: a monitoring agent's
    adminAccess claim of allocationMode All reaches every GPU of the node without holding any
    for work, so it must not explain a hijacker's use of an idle one."""
    objects = _cluster(
        namespace("gpu-monitoring", **{"gpuposture.io/platform": "true"}),
        claim("alpha", "train-gpu", ["gpu-0"], reserved_for=["train-0"]),
        dra_pod("alpha", "train-0", "train-gpu"),
        claim("gpu-monitoring", "dcgm", [f"gpu-{i}" for i in range(4)], admin=True),
        dra_pod("gpu-monitoring", "dcgm-0", "dcgm"),
    )
    snapshot = world(objects, TENANTS).snapshot
    held = dra_held(snapshot, snapshot.pods)
    assert held.devices == {UUIDS[0]}
    assert held.pods == {("alpha", "train-0")}


def test_claims_on_one_device_under_different_sharing_configs_meet():
    """Two claims allocated one device (consumable capacity, resource.k8s.io 1.34), one
    configured for MPS, the other for time-slicing: the device isolates neither from the
    other, so the pair is judged time-slicing, not filed apart under two modes."""
    objects = _cluster(
        claim("alpha", "train-gpu", ["gpu-0"], sharing="MPS", reserved_for=["train-0"]),
        claim("beta", "infer-gpu", ["gpu-0"], sharing="TimeSlicing", reserved_for=["infer-0"]),
        dra_pod("alpha", "train-0", "train-gpu"),
        dra_pod("beta", "infer-0", "infer-gpu"),
    )
    for obj in objects[-4:-2]:
        obj["status"]["allocation"]["devices"]["results"][0]["shareID"] = (
            f"share-{obj['metadata']['name']}"
        )
    (pair,) = run("SHARE-001", world(objects, TENANTS))
    assert pair.tenants == ("alpha", "beta")


def test_a_time_sliced_claim_generated_for_one_pod_is_that_pods_whole_gpu():
    """NVIDIA's examples put a TimeSlicing GpuConfig in a ResourceClaimTemplate so the
    containers of one pod share its GPU: the claim made for that pod serves no other, so the
    GPU is the pod's whole (no time-slicing approval, usage attributable to the pod)."""
    generated = claim(
        "alpha",
        "train-0-gpu-7xq2p",
        ["gpu-3"],
        sharing="TimeSlicing",
        reserved_for=["train-0"],
        owner_pod="train-0",
    )
    inputs = world(
        _cluster(
            claim_template("alpha", "one-gpu"),
            generated,
            dra_pod("alpha", "train-0", template="one-gpu", generated="train-0-gpu-7xq2p"),
        ),
        TENANTS,
    )
    for check_id in ("SHARE-004", "ATTR-002"):
        assert run(check_id, inputs) == [], check_id
    index = DraIndex(inputs.snapshot)
    (held,) = index.held_devices(index.claims[("alpha", "train-0-gpu-7xq2p")])
    assert held.mode == "exclusive"
    assert held.basis.endswith("among the containers of pod train-0 only")
    # Another pod let in by the generated claim's name shares it: time-slicing again.
    generated["status"]["reservedFor"].append({"resource": "pods", "name": "x", "uid": "x"})
    shared = world(_cluster(generated, dra_pod("alpha", "x", "train-0-gpu-7xq2p")), TENANTS)
    index = DraIndex(shared.snapshot)
    (held,) = index.held_devices(index.claims[("alpha", "train-0-gpu-7xq2p")])
    assert held.mode == "time_slicing"


def test_dra_co_tenancy_titles_name_the_device_class_and_claims_not_nvidia_com_gpu():
    """A DRA cluster may advertise no nvidia.com/gpu (the pool key shared holdings meet under):
    titles and evidence name the DeviceClass and the claims; the key stays, so the finding's
    identity does not move."""
    inputs = world(_two_tenants_on(["gpu-0"], ["gpu-0"], "TimeSlicing"), TENANTS)
    (draft,) = run("SHARE-001", inputs)
    assert draft.title == (
        "Tenants alpha and beta time-slice GPUs of DeviceClass gpu.nvidia.com (ResourceClaims "
        "alpha/train-gpu, beta/infer-gpu) in node gpu-a (certain co-residence)"
    )
    assert "nvidia.com/gpu " not in draft.title
    assert draft.evidence["dra_claims"] == ["alpha/train-gpu", "beta/infer-gpu"]
    assert draft.evidence["dra_device_classes"] == ["gpu.nvidia.com"]
    assert draft.key.startswith("nvidia.com/gpu:")
    mps = world(_two_tenants_on(["gpu-1"], ["gpu-1"], "MPS"), TENANTS)
    (draft,) = run("SHARE-006", mps)
    assert draft.title.startswith(
        "Tenants alpha and beta share GPUs of DeviceClass gpu.nvidia.com (ResourceClaims "
        "alpha/train-gpu, beta/infer-gpu) by MPS in node gpu-a"
    )
    classes = (tenant("alpha", "sensitive"), BETA)
    sensitive = world(_two_tenants_on(["gpu-0"], ["gpu-0"], "TimeSlicing"), classes)
    named = "GPUs of DeviceClass gpu.nvidia.com (ResourceClaims alpha/train-gpu, beta/infer-gpu)"
    for check_id in ("SHARE-003", "SHARE-007"):
        (draft,) = run(check_id, sensitive)
        assert named in draft.title and "nvidia.com/gpu" not in draft.title


def test_a_dra_title_names_an_env_access_as_such_not_as_nvidia_com_gpu():
    """A party reaching the GPUs through NVIDIA_VISIBLE_DEVICES as well: the title says so,
    not "nvidia.com/gpu" (the pool key of an env holding too)."""
    from tests.posture.test_env_holdings import env_pod, toolkit

    objects = [*_two_tenants_on(["gpu-0"], ["gpu-0"], "TimeSlicing"), toolkit(), env_pod("beta")]
    titles = [d.title for d in run("SHARE-001", world(objects, TENANTS))]
    assert titles and all("nvidia.com/gpu " not in t for t in titles), titles
    assert any("and GPUs reached through NVIDIA_VISIBLE_DEVICES" in t for t in titles), titles
