"""POD-001's rule denies Windows HostProcess pods in the preview as at admission, whatever
exemption another check has (a POD-002 exemption for the hostNetwork HostProcess requires)."""

from __future__ import annotations

import pytest

from enforcement.inputs import PackInputs
from enforcement.preview import denials, pack_rules
from inventory.sources.pods import pod_from_object
from posture.exemptions import Exemption
from tests.enforcement.packs import INPUTS, container, pack, pod

EXEMPT_HOST_NETWORK = PackInputs(
    cluster=INPUTS.cluster,
    tenants=INPUTS.tenants,
    exemptions=(Exemption(id=9, check_id="POD-002", namespace="team-alpha", name="win-exporter"),),
)


def host_process_pod(level: str, where: str = "containers") -> dict:
    windows = {"windowsOptions": {"hostProcess": True}}
    if level == "pod":
        return pod(name="win-exporter", hostNetwork=True, securityContext=windows)
    return pod(name="win-exporter", hostNetwork=True, **{where: container(securityContext=windows)})


@pytest.mark.parametrize("dialect", ["vap", "kyverno"])
@pytest.mark.parametrize(
    ("level", "where"),
    [
        ("pod", "containers"),
        ("container", "containers"),
        ("container", "initContainers"),
        ("container", "ephemeralContainers"),
    ],
)
def test_preview_denies_a_host_process_pod_its_host_network_exemption_does_not_cover(
    dialect, level, where
):
    rules, _ = pack_rules(pack(dialect, mode="enforce", inputs=EXEMPT_HOST_NETWORK))
    raw = host_process_pod(level, where)
    stored = pod_from_object(raw, "team-alpha")  # as the sync stores it, rebuilt by the preview
    found = {(rule.rule, rule.check) for rule, _ in denials(rules, stored)}
    assert found == {("no-privileged", "POD-001")}  # POD-002's rule is exempt for it


@pytest.mark.parametrize("dialect", ["vap", "kyverno"])
def test_a_windows_pod_that_is_not_host_process_passes(dialect):
    rules, _ = pack_rules(pack(dialect, mode="enforce", inputs=EXEMPT_HOST_NETWORK))
    raw = pod(
        name="win-app",
        securityContext={"windowsOptions": {"runAsUserName": "ContainerUser"}},
        containers=container(securityContext={"windowsOptions": {"hostProcess": False}}),
    )
    assert denials(rules, pod_from_object(raw, "team-alpha")) == []
