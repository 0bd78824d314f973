"""Class pools by taint (issue 17 item 10): K8S-002 and POD-009 read one rule. A taint whose key
is one of GPUPOSTURE_POOL_TAINT_KEYS names the class by its value; a class may list exact taints;
any other taint, however strict, marks no class pool. Nodes as `kubectl get -o json` prints them."""

from __future__ import annotations

import dataclasses

import pytest

from tenants.pool_taints import PoolTaintRules, parse_pool_taint
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, namespace, node, pod, run, world

EXT = tenant("ext", "external")
OURS = PoolTaintRules()  # the default: gpuposture.io/trust-class
CONFIGURED = PoolTaintRules(keys=("tenant-class", "gpuposture.io/trust-class"))
EXACT = PoolTaintRules(exact={"external": ("dedicated=regulated:NoSchedule",)})


def _tainted(*taints: dict) -> dict:
    found = node("gpu-a", capacity={"nvidia.com/gpu": "8"})
    found["spec"]["taints"] = [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        *taints,
    ]
    return found


def _taint(key: str, value: str, effect: str = "NoSchedule") -> dict:
    return {"key": key, "value": value, "effect": effect}


def _fired(rules: PoolTaintRules, *taints: dict) -> dict[str, bool]:
    objects = [
        _tainted(*taints),
        namespace("ext"),
        pod("ext", "train-0", container(gpu={"nvidia.com/gpu": "1"})),
    ]
    inputs = dataclasses.replace(world(objects, (EXT,)), pool_taint_rules=rules)
    return {check: bool(run(check, inputs)) for check in ("K8S-002", "POD-009")}


@pytest.mark.parametrize(
    ("rules", "taints", "k8s002", "pod009"),
    [
        # Our key, valued the tenant's class.
        (OURS, [_taint("gpuposture.io/trust-class", "external")], False, False),
        (OURS, [_taint("gpuposture.io/trust-class", "external", "NoExecute")], False, False),
        # PreferNoSchedule keeps nobody off.
        (OURS, [_taint("gpuposture.io/trust-class", "external", "PreferNoSchedule")], True, True),
        # A cluster's own key: unknown until configured, then a class pool for both checks.
        (OURS, [_taint("tenant-class", "external")], True, True),
        (CONFIGURED, [_taint("tenant-class", "external")], False, False),
        # A pool for another class: tainted (K8S-002 quiet), but not this tenant's pool.
        (CONFIGURED, [_taint("tenant-class", "sensitive")], False, True),
        # An exact taint the class lists in the admin.
        (EXACT, [_taint("dedicated", "regulated")], False, False),
        (EXACT, [_taint("dedicated", "regulated", "NoExecute")], True, True),
        # An unrelated NoSchedule taint is no pool taint, for either check.
        (OURS, [_taint("dedicated", "batch")], True, True),
        (CONFIGURED, [_taint("dedicated", "batch")], True, True),
        (OURS, [], True, True),
        # Tainted for two classes: pods there tolerate another class's taint, so the node is
        # no class's dedicated pool, for both checks.
        (
            OURS,
            [
                _taint("gpuposture.io/trust-class", "external"),
                _taint("gpuposture.io/trust-class", "sensitive"),
            ],
            True,
            True,
        ),
        # Two taints that both name the tenant's class are still its pool.
        (
            CONFIGURED,
            [_taint("tenant-class", "external"), _taint("gpuposture.io/trust-class", "external")],
            False,
            False,
        ),
    ],
)
def test_k8s002_and_pod009_read_the_same_pool_rule(rules, taints, k8s002, pod009):
    assert _fired(rules, *taints) == {"K8S-002": k8s002, "POD-009": pod009}


def test_k8s002_evidence_says_which_taints_name_no_class():
    objects = [_tainted(_taint("dedicated", "batch")), namespace("ext"), pod("ext", "t")]
    inputs = dataclasses.replace(world(objects, (EXT,)), pool_taint_rules=CONFIGURED)
    (draft,) = run("K8S-002", inputs)
    assert draft.evidence["unrelated_taints"] == ["dedicated=batch:NoSchedule"]
    assert draft.evidence["class_taint_keys"] == ["tenant-class", "gpuposture.io/trust-class"]


def test_pod009_evidence_names_every_taint_that_would_do():
    rules = PoolTaintRules(
        keys=("tenant-class",), exact={"external": ("dedicated=regulated:NoSchedule",)}
    )
    objects = [
        _tainted(_taint("tenant-class", "sensitive")),
        namespace("ext"),
        pod("ext", "train-0", container(gpu={"nvidia.com/gpu": "1"})),
    ]
    inputs = dataclasses.replace(world(objects, (EXT,)), pool_taint_rules=rules)
    (draft,) = run("POD-009", inputs)
    assert draft.evidence["expected_taints"] == [
        "tenant-class=external:NoSchedule (or NoExecute)",
        "dedicated=regulated:NoSchedule",
    ]
    (entry,) = draft.evidence["pods"]
    assert entry["node_pool_for"] == ["sensitive"]


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("tenant-class=sensitive:NoSchedule", ("tenant-class", "sensitive", "NoSchedule")),
        ("dedicated:NoExecute", ("dedicated", "", "NoExecute")),
        (" pool=gpu-a:NoSchedule ", ("pool", "gpu-a", "NoSchedule")),
    ],
)
def test_parse_pool_taint(text, parsed):
    assert parse_pool_taint(text) == parsed


@pytest.mark.parametrize(
    "text", ["tenant-class=sensitive", "a=b:PreferNoSchedule", "=x:NoSchedule", "a b:NoSchedule"]
)
def test_parse_pool_taint_refuses(text):
    with pytest.raises(ValueError, match="key=value:NoSchedule"):
        parse_pool_taint(text)


def test_the_generic_gpu_taint_never_marks_a_class_pool():
    """GKE puts nvidia.com/gpu=present:NoSchedule on every GPU node and a toleration for it on
    every GPU pod: listed as a class's exact taint (or configured as a key) it would make every
    GPU node that class's pool and silence K8S-002 and POD-009 everywhere."""
    generic = _taint("nvidia.com/gpu", "present")
    listed = PoolTaintRules(exact={"external": ("nvidia.com/gpu=present:NoSchedule",)})
    keyed = PoolTaintRules(keys=("nvidia.com/gpu",))
    assert _fired(listed, generic) == {"K8S-002": True, "POD-009": True}
    assert keyed.classes_of("nvidia.com/gpu", "external", "NoSchedule") == set()


def test_the_admin_refuses_the_generic_gpu_taint_for_a_class():
    from django.core.exceptions import ValidationError

    from tenants.models import validate_pool_taints

    with pytest.raises(ValidationError, match="every GPU pod tolerates"):
        validate_pool_taints(["nvidia.com/gpu:NoSchedule"])
    validate_pool_taints(["dedicated=regulated:NoSchedule"])
    assert parse_pool_taint("nvidia.com/gpu=present:NoSchedule")[0] == "nvidia.com/gpu"


def test_a_pool_taint_naming_no_class_marks_no_pool():
    """rtvirt k43: `gpuposture.io/trust-class=customers:NoSchedule` where no trust class is
    called customers (or a typo, `externel`) is no class's pool: K8S-002 fires and says which
    taint names no class; POD-009 reads the same rule and finds the node in no pool."""
    for value in ("customers", "externel", ""):
        taint = _taint("gpuposture.io/trust-class", value)
        assert _fired(OURS, taint) == {"K8S-002": True, "POD-009": True}, value
    objects = [
        _tainted(_taint("gpuposture.io/trust-class", "customers")),
        namespace("ext"),
        pod("ext", "train-0", container(gpu={"nvidia.com/gpu": "1"})),
    ]
    inputs = dataclasses.replace(world(objects, (EXT,)), pool_taint_rules=OURS)
    (k8s,) = run("K8S-002", inputs)
    named = ["gpuposture.io/trust-class=customers:NoSchedule"]
    assert k8s.evidence["taints_naming_no_class"] == named
    assert "no trust class is called 'customers'" in k8s.evidence["naming_no_class"]
    assert k8s.evidence["unrelated_taints"] == []
    assert "gpuposture.io/trust-class=customers:NoSchedule names no trust class" in k8s.title
    (pod009,) = run("POD-009", inputs)
    (entry,) = pod009.evidence["pods"]
    assert entry["node_pool_for"] == []
    assert entry["node_taints_naming_no_class"] == named


def test_a_pool_taint_names_a_class_the_registry_holds():
    """A class created in the admin (not a seed) is named by its slug like any other."""
    custom = PoolTaintRules(classes=frozenset({"external", "customers"}))
    taint = _taint("gpuposture.io/trust-class", "customers")
    assert custom.classes_of("gpuposture.io/trust-class", "customers", "NoSchedule") == {
        "customers"
    }
    # The node is the customers class's pool: tainted (K8S-002 quiet), not ext's (POD-009).
    assert _fired(custom, taint) == {"K8S-002": False, "POD-009": True}
    # A class's exact taint names its class whatever the key's value.
    listed = PoolTaintRules(exact={"external": ("gpuposture.io/trust-class=ext-pool:NoSchedule",)})
    assert _fired(listed, _taint("gpuposture.io/trust-class", "ext-pool")) == {
        "K8S-002": False,
        "POD-009": False,
    }
