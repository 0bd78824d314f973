"""POD-008 on the example keys AWS prints in its documentation: pasted into a pod's env they
are still literal secrets in a pod spec (the practice the check reports), with the evidence
saying which vendor's documented example each is and never the value."""

from __future__ import annotations

import json

import pytest

from inventory.credential_shapes import credential_match
from inventory.env_seal import SEALED_VALUE, literal_env
from posture.rules.registry import CHECKS
from tests.posture.builders import container, container_entry, env, inputs, pod, run, tenant

TEAM = tenant("team", namespaces=("team-a",))
# AWS's documentation uses these key pairs in its CLI and SDK examples.
DOC_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
DOC_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
DOC_SECRET_2 = "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"


def pod008(*variables):
    p = pod("team-a", containers=(container(env=tuple(variables)),))
    return run("POD-008", inputs(pods=(p,), tenants=(TEAM,)))


@pytest.mark.parametrize("secret", [DOC_SECRET, DOC_SECRET_2])
def test_a_documented_example_key_is_sealed_and_reported_as_the_example(secret):
    # As the sync stores it: sealed, the match and the vendor kept, the value not.
    stored = literal_env("AWS_SECRET_ACCESS_KEY", secret)
    assert stored.value == SEALED_VALUE and stored.credential_example == "AWS"
    (draft,) = pod008(literal_env("AWS_ACCESS_KEY_ID", DOC_KEY_ID), stored)
    assert (draft.severity or CHECKS["POD-008"].severity) == "high"
    by_name = {v["name"]: v for v in container_entry(draft)["variables"]}
    assert set(by_name) == {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
    for entry in by_name.values():
        assert (entry["value_kind"], entry["example_of"]) == ("documented_example", "AWS")
    assert by_name["AWS_SECRET_ACCESS_KEY"]["rule"] == "name:AWS_SECRET_ACCESS_KEY"
    assert by_name["AWS_SECRET_ACCESS_KEY"]["value_length"] == 40
    text = json.dumps(draft.evidence) + draft.title
    assert secret not in text and DOC_KEY_ID not in text and "EXAMPLE" not in text
    assert "AWS's documented example" in draft.title


def test_a_real_looking_key_says_nothing_of_examples():
    made_up = "Zq3vT8nWm1Lr6Xc0Bd5Hs9Kf2Jp7Gy4Ua1Ve8Oi3Qt"
    (draft,) = pod008(literal_env("AWS_SECRET_ACCESS_KEY", made_up))
    (entry,) = container_entry(draft)["variables"]
    assert "value_kind" not in entry and "example_of" not in entry
    assert credential_match("AWS_SECRET_ACCESS_KEY", made_up).example is None


@pytest.mark.parametrize(
    "variable",
    [
        pytest.param(env("AWS_SECRET_ACCESS_KEY", ""), id="empty"),
        pytest.param(env("AWS_SECRET_ACCESS_KEY", None, "secretKeyRef:aws/key"), id="value-from"),
        pytest.param(env("AWS_SECRET_ACCESS_KEY", "$(AWS_KEY)"), id="variable-reference"),
        pytest.param(env("AWS_SECRET_ACCESS_KEY", "changeme"), id="placeholder"),
    ],
)
def test_empty_values_references_and_placeholders_still_do_not_fire(variable):
    assert pod008(variable) == []
