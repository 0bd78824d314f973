"""K8S-009 on AKS: the Azure Policy add-on deploys Gatekeeper constraints of its own template
kinds (K8sAzureV2NoPrivilege, K8sAzureV2BlockHostNamespace, K8sAzureV3HostNetworkingPorts,
K8sAzureV3HostFilesystem, K8sAzureV3AllowedCapabilities), named
`azurepolicy-<kind>-<hash>`, with parameters of their own (allowHostNetwork, excludedImages,
excludedContainers). They are read for what they deny, less what their parameters allow."""

from __future__ import annotations

from typing import Any

import pytest

from tests.posture.admission_world import constraint, namespace
from tests.posture.test_admission import k8s009

AKS_SYSTEM = ("kube-system", "gatekeeper-system", "azure-arc", "azure-extensions-usage-system")
# The pod security baseline initiative as the add-on writes it into the cluster.
BASELINE: dict[str, dict[str, Any]] = {
    "K8sAzureV2NoPrivilege": {"excludedContainers": [], "excludedImages": []},
    "K8sAzureV2BlockHostNamespace": {"excludedImages": []},
    "K8sAzureV3HostNetworkingPorts": {
        "allowHostNetwork": False,
        "minPort": 0,
        "maxPort": 0,
        "excludedContainers": [],
        "excludedImages": [],
    },
    "K8sAzureV3HostFilesystem": {
        "allowedHostPaths": [],
        "excludedContainers": [],
        "excludedImages": [],
    },
    "K8sAzureV3AllowedCapabilities": {
        "allowedCapabilities": [],
        "requiredDropCapabilities": [],
        "excludedContainers": [],
        "excludedImages": [],
    },
}


def azure(**changed: dict[str, Any]) -> list[dict[str, Any]]:
    """The baseline constraints, with `changed` parameters merged into the kinds named."""
    out = []
    for kind, parameters in BASELINE.items():
        obj = constraint(
            name=f"azurepolicy-{kind.lower()}-bba3aab5a745b0e81725",
            action="deny",
            excluded=AKS_SYSTEM,
            kind=kind,
            parameters={**parameters, **changed.get(kind, {})},
        )
        obj["metadata"]["labels"] = {"managed-by": "azure-policy-addon"}
        out.append(obj)
    return out


def test_the_aks_baseline_initiative_in_deny_enforces_every_control():
    # Before: K8sAzureV2NoPrivilege was not read as refusing privileged containers
    # ("noprivilege" lacks "privileged") and every tenant namespace got a partial finding.
    assert k8s009([namespace("alpha"), *azure()]) == []


@pytest.mark.parametrize(
    ("changed", "missing"),
    [
        pytest.param(
            {"K8sAzureV3HostNetworkingPorts": {"allowHostNetwork": True}},
            ["hostNetwork (POD-002)"],
            id="allow-host-network",
        ),
        pytest.param(
            {"K8sAzureV2NoPrivilege": {"excludedImages": ["nvcr.io/nvidia/*"]}},
            ["privileged (POD-001)"],
            id="no-privilege-excluded-images",
        ),
        pytest.param(
            {"K8sAzureV2BlockHostNamespace": {"excludedContainers": ["profiler"]}},
            ["hostPID (POD-002)", "hostIPC (POD-002)"],
            id="host-namespace-excluded-container-names",
        ),
        pytest.param(
            {"K8sAzureV3HostFilesystem": {"allowedHostPaths": [{"pathPrefix": "/dev"}]}},
            ["hostPath (POD-003)"],
            id="hostfilesystem-allows-dev",
        ),
        pytest.param(
            {"K8sAzureV3AllowedCapabilities": {"allowedCapabilities": ["SYS_ADMIN"]}},
            ["capabilities (POD-004)"],
            id="capabilities-allow-sys-admin",
        ),
    ],
)
def test_what_an_azure_constraint_allows_is_not_enforced(changed, missing):
    (draft,) = k8s009([namespace("alpha"), *azure(**changed)])
    assert draft.evidence["verdict"] == "partial"
    assert draft.evidence["missing_controls"] == missing


def test_azure_v4_hostfilesystem_and_v1_noprivilege_are_read_like_their_successors():
    objects = [namespace("alpha"), *azure()]
    for obj in objects[1:]:
        obj["kind"] = {
            "K8sAzureV2NoPrivilege": "K8sAzureV1NoPrivilege",
            "K8sAzureV3HostFilesystem": "K8sAzureV4HostFilesystem",
        }.get(obj["kind"], obj["kind"])
    assert k8s009(objects) == []


def test_no_privilege_escalation_is_not_no_privileged_containers():
    objects = [namespace("alpha"), *azure()]
    objects[1]["kind"] = "K8sAzureV3NoPrivilegeEscalation"
    (draft,) = k8s009(objects)
    assert draft.evidence["missing_controls"] == ["privileged (POD-001)"]


@pytest.mark.parametrize(
    ("disallowed", "fires"),
    [(["NET_RAW"], True), (["ALL"], False)],
    ids=["names-one", "names-all"],
)
def test_a_capability_deny_list_counts_only_when_it_denies_all(disallowed, fires):
    objects = [namespace("alpha"), *azure()]
    objects[-1] = constraint(
        name="azurepolicy-k8sazurev3disallowedcapabilities-1",
        kind="K8sAzureV3DisallowedCapabilities",
        parameters={"disallowedCapabilities": disallowed},
    )
    drafts = k8s009(objects)
    assert bool(drafts) is fires
    if fires:
        assert drafts[0].evidence["missing_controls"] == ["capabilities (POD-004)"]
