"""POD-008 by a variable's name asks for a value that could be the credential the vendor issues:
`HF_TOKEN=main`, `WANDB_API_KEY=offline` are a branch and a mode, no key (every vendor's key is
far longer than 16 characters), whether literal, sealed by a sync, or read from a ConfigMap.
A secret a person chooses (`*_PASSWORD`, an S3-compatible store's AWS_SECRET_ACCESS_KEY) counts
at any length, and every vendor shape counts as before.

Values are made up here from a seeded generator (no live-looking token in the repo)."""

from __future__ import annotations

import random
import string

import pytest

from inventory.credential_shapes import credential_match, facts_match, value_facts
from inventory.env_seal import literal_env
from inventory.snapshot import EnvVar
from inventory.sources.env_configmaps import env_configmaps
from inventory.sources.gpu_config import RawConfigMap
from posture.rules.pod.credentials import stored_match
from tests.posture.builders import container, container_entry, env, inputs, pod, run, tenant

NS = "team-a"
TEAM = tenant("team", namespaces=(NS,))
_rng = random.Random(31)
ALNUM = string.ascii_letters + string.digits
KEY = "".join(_rng.choice(ALNUM) for _ in range(40))  # a vendor-issued key's length

# Real values under vendor credential names that no vendor issues: each fired before.
NOT_ISSUED = {
    "hf-branch": ("HF_TOKEN", "main"),
    "hub-read": ("HUGGING_FACE_HUB_TOKEN", "read-only"),
    "wandb-mode": ("WANDB_API_KEY", "offline"),
    "openai-local": ("OPENAI_API_KEY", "sk-local"),
    "kaggle": ("KAGGLE_KEY", "kaggle-cli"),
    "ngc": ("NGC_API_KEY", "ngc"),
    "github-bot": ("GITHUB_TOKEN", "ci-bot"),
    "azure-key-name": ("AZURE_OPENAI_API_KEY", "azure-dev"),
    "fifteen": ("HF_TOKEN", "abcdefghijklmno"),
    # Padding is no length: what is left after the spaces is judged.
    "padded": ("HF_TOKEN", "main" + " " * 12),
    # A database's own password variable is no cloud or ML-platform credential.
    "database-password": ("POSTGRES_PASSWORD", "pgS3cret"),
}
# Values that still count by the name: a secret a person chose, or a value as long as a key.
STILL_FIRE = {
    "cert-password": ("AZURE_CLIENT_CERTIFICATE_PASSWORD", "Pfx!2024", "name:"),
    "mlflow-password": ("MLFLOW_TRACKING_PASSWORD", "mlflow-pw", "name:"),
    "minio-secret": ("AWS_SECRET_ACCESS_KEY", "minio123", "name:"),
    "sixteen": ("HF_TOKEN", "abcdefghijklmnop", "name:"),
    "issued-length": ("WANDB_API_KEY", KEY, "name:"),
    "azure-key": ("AZURE_STORAGE_KEY", KEY, "name:AZURE_*_KEY"),
}


def _rule(name: str) -> str:
    return f"name:{name}"


@pytest.mark.parametrize(("name", "value"), NOT_ISSUED.values(), ids=NOT_ISSUED.keys())
def test_a_short_value_under_a_vendor_name_is_no_credential(name, value):
    assert credential_match(name, value) is None


@pytest.mark.parametrize(("name", "value", "rule"), STILL_FIRE.values(), ids=STILL_FIRE.keys())
def test_a_chosen_secret_or_a_key_long_value_still_counts(name, value, rule):
    match = credential_match(name, value)
    expected = rule if rule != "name:" else _rule(name)
    assert match is not None and match.rule == expected


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("OPENAI_API_KEY", "sk-proj-" + "".join(_rng.choice(ALNUM) for _ in range(60))),
        (
            "ANYTHING",
            "AKIA" + "".join(_rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16)),
        ),
        ("WANDB_API_KEY", "".join(_rng.choice("0123456789abcdef") for _ in range(40))),
    ],
)
def test_vendor_shapes_are_unchanged(name, value):
    match = credential_match(name, value)
    assert match is not None and match.rule.startswith("value:")


def test_the_pod_with_a_branch_in_hf_token_raises_nothing():
    main = container(env=(env("HF_TOKEN", "main"), env("WANDB_API_KEY", "offline")))
    world = inputs(pods=(pod(NS, "trainer-0", containers=(main,)),), tenants=(TEAM,))
    assert run("POD-008", world) == []


def _sealed(name: str, rule: str, length: int) -> EnvVar:
    """A variable as an earlier sync sealed it, with the rule it matched then."""
    return EnvVar(
        name, "<literal value not stored>", length=length, credential_rule=rule, credential_kind="k"
    )


@pytest.mark.parametrize(
    ("var", "fires"),
    [
        (_sealed("HF_TOKEN", "name:HF_TOKEN", 4), False),
        (_sealed("AZURE_OPENAI_API_KEY", "name:AZURE_*_KEY", 9), False),
        (_sealed("HF_TOKEN", "name:HF_TOKEN", 37), True),
        (_sealed("MLFLOW_TRACKING_PASSWORD", "name:MLFLOW_TRACKING_PASSWORD", 6), True),
        (_sealed("AWS_SECRET_ACCESS_KEY", "name:AWS_SECRET_ACCESS_KEY", 8), True),
        (_sealed("X", "value:hugging_face_token", 4), True),  # a shape is judged by the value
    ],
)
def test_a_value_sealed_before_is_judged_by_its_length(var, fires):
    assert (stored_match(var) is not None) is fires


def test_a_value_sealed_now_agrees():
    assert stored_match(literal_env("HF_TOKEN", "main")) is None
    assert stored_match(literal_env("HF_TOKEN", KEY)).rule == "name:HF_TOKEN"


def _configmap_world(data: dict[str, str], *names: str):
    refs = tuple(EnvVar(n, None, "configMapKeyRef", "settings", n) for n in names)
    pods = (pod(NS, "trainer-0", containers=(container(env=refs),)),)
    kept = tuple(env_configmaps(pods, [RawConfigMap(NS, "settings", data)]))
    return inputs(pods=pods, tenants=(TEAM,), env_configmaps=kept)


def test_the_configmap_path_agrees():
    data = {"HF_TOKEN": "main", "WANDB_API_KEY": "offline", "GITHUB_TOKEN": KEY}
    data |= {"MLFLOW_TRACKING_PASSWORD": "mlflow-pw"}
    (draft,) = run("POD-008", _configmap_world(data, *data))
    found = {v["name"]: v["rule"] for v in container_entry(draft)["variables"]}
    assert found == {
        "GITHUB_TOKEN": "name:GITHUB_TOKEN",
        "MLFLOW_TRACKING_PASSWORD": "name:MLFLOW_TRACKING_PASSWORD",
    }


@pytest.mark.parametrize(
    ("name", "value"), [*NOT_ISSUED.values(), *((n, v) for n, v, _ in STILL_FIRE.values())]
)
def test_the_stored_facts_judge_as_the_value_does(name, value):
    facts = value_facts(value)
    assert facts is not None
    assert facts_match(name, facts) == credential_match(name, value)


def test_the_no_key_value_local_servers_document_is_a_placeholder():
    """llama.cpp's and LocalAI's documented "no key" for the OpenAI SDK: no value to keep at
    all (a placeholder), so no name can make it a credential, from a ConfigMap either."""
    assert value_facts("sk-no-key-required") is None
    assert credential_match("OPENAI_API_KEY", "sk-no-key-required") is None
    # The whole value only: a key that merely starts with the phrase is still judged.
    assert credential_match("OPENAI_API_KEY", "sk-no-key-required-" + KEY[:24]) is not None
