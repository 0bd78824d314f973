"""The pack's `no-visible-devices-without-gpu` exempts what POD-011 exempts in a KAI fraction
pod: the container KAI's binder sets NVIDIA_VISIBLE_DEVICES in (from its `...-shared-gpu-0`
ConfigMap), the one `gpu-fraction-container-name` names, else the first app container. Any
other container setting it is still denied, as POD-011 still reports it."""

from __future__ import annotations

import pytest

from inventory.sources.pods import pod_from_object
from posture.rules.pod.visible_devices import judged_containers
from tests.enforcement.packs import VISIBLE, pod
from tests.enforcement.test_rules import DIALECTS, denied_by

RULE = "no-visible-devices-without-gpu"
BINDER_ENV = [
    {
        "name": VISIBLE,
        "valueFrom": {
            "configMapKeyRef": {"name": "frac-x7k2q9p-shared-gpu-0", "key": "RUNAI-VISIBLE-DEVICES"}
        },
    }
]


def app(name: str, env: list | None = None) -> dict:
    return {"name": name, "image": "registry.example.com/app:1", "env": env or []}


def fraction(
    *containers: dict,
    named: str | None = None,
    key: str = "gpu-fraction",
    share: str = "0.5",
    **spec: object,
) -> dict:
    """A pod KAI Scheduler shares a GPU with: its fraction annotation (`key`), and the
    container the binder hands the GPU to where `named`."""
    obj = pod(containers=list(containers), **spec)
    obj["metadata"]["annotations"] = {key: share} | (
        {"gpu-fraction-container-name": named} if named is not None else {}
    )
    return obj


# (pod, denied?): POD-011's own reading decides, the pack follows it.
CASES = {
    "binder's variable in the first app container": (fraction(app("main", BINDER_ENV)), False),
    "a gpu-memory fraction too": (
        fraction(app("main", BINDER_ENV), key="gpu-memory", share="4096"),
        False,
    ),
    "no fraction annotation: judged": (pod(containers=[app("main", BINDER_ENV)]), True),
    "a blank fraction annotation is none": (fraction(app("main", BINDER_ENV), share=" "), True),
    "a sidecar setting `all` is judged": (
        fraction(app("server", BINDER_ENV), app("metrics", [{"name": VISIBLE, "value": "all"}])),
        True,
    ),
    "the annotation names the second container": (
        fraction(app("proxy"), app("server", BINDER_ENV), named=" server "),
        False,
    ),
    "named, the first container is judged": (
        fraction(app("proxy", BINDER_ENV), app("server"), named="server"),
        True,
    ),
    "named, an init container (a native sidecar) may carry it": (
        fraction(app("main"), named="gpu-init", initContainers=[app("gpu-init", BINDER_ENV)]),
        False,
    ),
    "a name matching no container exempts none": (
        fraction(app("main", BINDER_ENV), named="nope"),
        True,
    ),
    "never a debug container": (
        fraction(
            app("main"),
            named="dbg",
            ephemeralContainers=[app("dbg", [{"name": VISIBLE, "value": "all"}])],
        ),
        True,
    ),
}


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("case", CASES)
def test_the_pack_exempts_the_fraction_container_as_pod011_does(dialect, case):
    obj, denied = CASES[case]
    assert (RULE in denied_by(dialect, obj)) is denied


@pytest.mark.parametrize("case", CASES)
def test_pod011_reads_the_cases_so(case):
    """The cases' verdicts are POD-011's: a denied pod has a judged container setting the
    variable, an admitted one none."""
    obj, denied = CASES[case]
    obj = obj | {"status": {"phase": "Pending"}}
    judged = judged_containers(pod_from_object(obj, obj["metadata"]["namespace"]))
    assert any(any(e.name == VISIBLE for e in c.env) for c in judged) is denied
