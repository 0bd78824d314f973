"""POD-008 for credentials a container takes from a ConfigMap (configMapKeyRef, envFrom with
its prefix): the ConfigMap keeps them in clear, so they count as a literal value would. The
ConfigMap goes through the sync's reader (inventory/sources/env_configmaps.py), which keeps no
value, only each key's facts. A ConfigMap the snapshot does not hold says nothing.

Values are made up here from a seeded generator (no live-looking token in the repo)."""

from __future__ import annotations

import json
import random
import string

import pytest

from inventory.credential_shapes import ValueFacts, credential_match, facts_match, value_facts
from inventory.snapshot import EnvVar
from inventory.sources.env_configmaps import env_configmaps
from inventory.sources.gpu_config import RawConfigMap
from tests.posture.builders import container, container_entry, env, inputs, pod, run, tenant

TEAM = tenant("nova", namespaces=("nova-dynamo",))
NS = "nova-dynamo"
_rng = random.Random(65)
ALNUM = string.ascii_letters + string.digits
HF = "hf_" + "".join(_rng.choice(ALNUM) for _ in range(34))
RANDOM = "".join(_rng.choice(ALNUM) for _ in range(32))
PLAIN = "Qx7" + "".join(_rng.choice(ALNUM) for _ in range(9))  # real, but neither shaped nor long


def cm_ref(name: str, configmap: str, key: str) -> EnvVar:
    return EnvVar(name, None, "configMapKeyRef", configmap, key)


def world(containers, configmaps: dict[str, dict[str, str]]):
    """One tenant pod with `containers`, and the ConfigMaps of its namespace as the sync keeps
    them (only those some container reads env from)."""
    pods = (pod(NS, "llama-disagg-vllmdecodeworker-5d9c", containers=tuple(containers)),)
    raw = [RawConfigMap(NS, name, data) for name, data in configmaps.items()]
    kept = tuple(env_configmaps(pods, raw))
    return inputs(pods=pods, tenants=(TEAM,), env_configmaps=kept)


def variables(drafts) -> list[dict]:
    (draft,) = drafts
    return container_entry(draft)["variables"]


def test_a_hugging_face_token_read_by_configmapkeyref_is_reported_without_its_value():
    decode = container("decode", env=(cm_ref("HF_TOKEN", "llama-disagg-config", "HF_TOKEN"),))
    drafts = run("POD-008", world([decode], {"llama-disagg-config": {"HF_TOKEN": HF}}))
    (found,) = variables(drafts)
    assert found["name"] == "HF_TOKEN"
    assert (found["configmap"], found["key"]) == ("llama-disagg-config", "HF_TOKEN")
    assert found["field"].endswith("env[0].valueFrom.configMapKeyRef")
    assert (found["rule"], found["hint"]) == ("value:hugging_face_token", "hf_…")
    assert found["value_length"] == len(HF)
    assert container_entry(drafts[0])["container"] == "decode"
    assert "from ConfigMap llama-disagg-config" in drafts[0].title
    assert HF not in json.dumps(drafts[0].evidence) + drafts[0].title


def test_the_variables_name_judges_a_key_named_otherwise():
    # HF_TOKEN is a name SDKs read a secret from: any real value as long as a key counts,
    # whatever the key (a shorter one is no key: test_pod008_issued_length.py).
    ref = cm_ref("HF_TOKEN", "settings", "token")
    (found,) = variables(
        run("POD-008", world([container(env=(ref,))], {"settings": {"token": RANDOM}}))
    )
    assert (found["rule"], found["key"]) == ("name:HF_TOKEN", "token")


def test_envfrom_makes_every_key_a_variable_with_its_prefix():
    main = container(env_from=("configMapRef:app-env:APP_",))
    data = {"API_TOKEN": RANDOM, "LOG_LEVEL": "debug", "MODEL": "meta-llama/Llama-3.1-8B"}
    (found,) = variables(run("POD-008", world([main], {"app-env": data})))
    assert (found["name"], found["key"], found["prefix"]) == ("APP_API_TOKEN", "API_TOKEN", "APP_")
    assert found["field"].endswith("envFrom[0].configMapRef")
    assert found["rule"] == "generic:*_TOKEN"


def test_an_env_entry_of_the_same_name_overrides_the_envfrom_key():
    main = container(env=(env("HF_TOKEN", ""),), env_from=("configMapRef:app-env",))
    assert run("POD-008", world([main], {"app-env": {"HF_TOKEN": HF}})) == []


@pytest.mark.parametrize(
    "variable, configmaps",
    [
        # Not in the snapshot (not read, or absent from the cluster): no guess.
        (cm_ref("HF_TOKEN", "missing", "HF_TOKEN"), {}),
        # The key is not in the ConfigMap (an optional reference): nothing is set.
        (cm_ref("HF_TOKEN", "cfg", "HF_TOKEN"), {"cfg": {"OTHER": HF}}),
        # A placeholder, an empty value, a path to a mounted secret.
        (cm_ref("HF_TOKEN", "cfg", "t"), {"cfg": {"t": "changeme"}}),
        (cm_ref("HF_TOKEN", "cfg", "t"), {"cfg": {"t": ""}}),
        (cm_ref("HF_TOKEN", "cfg", "t"), {"cfg": {"t": "/var/run/secrets/hf/token"}}),
        # No credential name and no credential shape.
        (cm_ref("LOG_LEVEL", "cfg", "level"), {"cfg": {"level": "debug"}}),
        # A Secret is where a credential belongs.
        (EnvVar("HF_TOKEN", None, "secretKeyRef", "hf", "token"), {"cfg": {"token": HF}}),
    ],
)
def test_quiet_cases(variable, configmaps):
    assert run("POD-008", world([container(env=(variable,))], configmaps)) == []


def test_a_snapshot_without_configmaps_says_nothing():
    main = container(env=(cm_ref("HF_TOKEN", "cfg", "HF_TOKEN"),), env_from=("configMapRef:cfg",))
    pods = (pod(NS, "p", containers=(main,)),)
    assert run("POD-008", inputs(pods=pods, tenants=(TEAM,))) == []


def test_the_kept_configmap_holds_no_value_but_the_facts():
    main = container(env=(cm_ref("HF_TOKEN", "cfg", "HF_TOKEN"),))
    (kept,) = env_configmaps(
        [pod(NS, "p", containers=(main,))],
        [RawConfigMap(NS, "cfg", {"HF_TOKEN": HF, "X": "changeme"})],
    )
    assert kept.keys == ("HF_TOKEN", "X")
    assert kept.values == {}
    assert set(kept.credentials) == {"HF_TOKEN"}
    assert HF not in json.dumps(kept.credentials)
    assert HF[3:9] not in json.dumps(kept.credentials)


@pytest.mark.parametrize(
    "name, value",
    [
        ("HF_TOKEN", HF),
        ("OPENAI_API_KEY", RANDOM),
        ("MY_TOKEN", RANDOM),
        ("MY_TOKEN", "kafka-consumer-token-v2"),
        ("WANDB_API_KEY", "".join(_rng.choice("0123456789abcdef") for _ in range(40))),
        ("AWS_SECRET_ACCESS_KEY", "/mnt/secrets/aws"),
        ("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE"),
        ("HF_TOKEN", "${HF_TOKEN}"),
        ("AZURE_STORAGE_KEY", PLAIN),
    ],
)
def test_the_stored_facts_judge_as_the_value_does(name, value):
    facts = value_facts(value)
    stored = None if facts is None else facts_match(name, ValueFacts.from_dict(facts.as_dict()))
    assert stored == credential_match(name, value)
