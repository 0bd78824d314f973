"""The demo's deployed admission pack: the generated pack as the API server returns it, with
exactly the two drifts the demo tells (demo/k8s_pack.py), judged by DRIFT-005's comparison.
No database: the pack is built from hand-made inputs by the pure enforcement.build.
"""

from __future__ import annotations

import pytest

from demo.k8s_pack import AUDITED_BINDING, EDITED_POLICY, deployed_pack
from enforcement.build import build_pack
from enforcement.cel import judge
from enforcement.inputs import PackInputs, TenantPack
from posture.rules.drift.pack_diff import pack_drift

RESEARCH = TenantPack(slug="research", trust_class="internal", namespaces=("research-llm",))
ORBITAL = TenantPack(slug="orbital", trust_class="external", namespaces=("cust-orbital",))
INPUTS = PackInputs(cluster="prod-east", tenants=(RESEARCH, ORBITAL))


@pytest.fixture(scope="module")
def generated() -> list[dict]:
    return build_pack(INPUTS, dialect="vap", mode="enforce")


def named(objects: list[dict], kind: str, name: str) -> dict:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def test_the_deployed_pack_differs_by_exactly_the_two_drifts(generated):
    comparison = pack_drift(generated, deployed_pack("prod-east", generated))
    assert [(d.kind, d.name, d.change) for d in comparison.differences] == [
        ("ValidatingAdmissionPolicy", EDITED_POLICY, "changed"),
        ("ValidatingAdmissionPolicyBinding", AUDITED_BINDING, "mode"),
    ]
    edited, weaker = comparison.differences
    assert edited.paths == ("spec.validations[0].expression",)
    assert (weaker.expected_mode, weaker.deployed_mode) == ("Enforce", "Audit")
    assert weaker.detail == "deployed in Audit where the class says Enforce"


def test_what_the_api_server_adds_is_no_drift(generated):
    served = deployed_pack("prod-east", generated, drifts=False)
    policy = named(served, "ValidatingAdmissionPolicy", EDITED_POLICY)
    # Server metadata and defaults are there, as a sync reads them back...
    assert policy["metadata"]["uid"] and policy["metadata"]["resourceVersion"]
    assert policy["spec"]["matchConstraints"]["matchPolicy"] == "Equivalent"
    assert policy["status"]["observedGeneration"] == 1
    # ...and only the generated fields are compared.
    assert pack_drift(generated, served).differences == ()
    assert generated == build_pack(INPUTS, dialect="vap", mode="enforce")  # left untouched


def test_the_hand_edit_lets_sys_admin_through_and_still_refuses_all(generated):
    def admitted(objects: list[dict], capability: str) -> bool:
        spec = named(objects, "ValidatingAdmissionPolicy", EDITED_POLICY)["spec"]
        container = {
            "name": "prof",
            "image": "dcgm",
            "securityContext": {"capabilities": {"add": [capability]}},
        }
        pod = {
            "metadata": {"name": "p", "namespace": "research-llm"},
            "spec": {"containers": [container]},
        }
        verdict = judge(
            variables=[(v["name"], v["expression"]) for v in spec["variables"]],
            conditions=[],
            expression=spec["validations"][0]["expression"],
            obj=pod,
        )
        assert verdict is not None and not verdict.error
        return verdict.admitted

    deployed = deployed_pack("prod-east", generated)
    assert not admitted(generated, "SYS_ADMIN") and admitted(deployed, "SYS_ADMIN")
    assert not admitted(generated, "ALL") and not admitted(deployed, "ALL")


def test_the_weaker_binding_keeps_its_namespaces_and_only_audits(generated):
    binding = named(
        deployed_pack("prod-east", generated), "ValidatingAdmissionPolicyBinding", AUDITED_BINDING
    )
    wanted = named(generated, "ValidatingAdmissionPolicyBinding", AUDITED_BINDING)
    assert binding["spec"]["validationActions"] == ["Audit", "Warn"]
    assert binding["metadata"]["generation"] == 2
    selector = binding["spec"]["matchResources"]["namespaceSelector"]
    assert selector == wanted["spec"]["matchResources"]["namespaceSelector"]


def test_the_same_seed_deploys_the_same_objects(generated):
    assert deployed_pack("prod-east", generated) == deployed_pack("prod-east", generated)


def test_a_pack_without_the_objects_to_drift_is_refused_by_name():
    without_research = build_pack(
        PackInputs(cluster="c", tenants=(ORBITAL,)), dialect="vap", mode="enforce"
    )
    with pytest.raises(ValueError, match=AUDITED_BINDING):
        deployed_pack("prod-east", without_research)
