"""Secrets a tenant pastes into `env[].value` are judged (POD-008) but never stored: the sync
keeps only the values a check reads, and seals every other literal (its length and the
credential rule it matched are kept instead)."""

from __future__ import annotations

import copy
import json

import pytest

from inventory.env_seal import SEALED_VALUE, literal_env, seal_stored_env
from inventory.models import Pod
from posture.models import Finding
from tests.conftest import load_json

HF = "hf_Zq4mT8vXr2LpN6sWc1YbK9dJ3hGfA7eU0i"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9Q2LmT4vA"


def test_values_a_check_reads_are_kept_and_others_sealed():
    assert literal_env("NVIDIA_VISIBLE_DEVICES", "all").value == "all"
    assert literal_env("JUPYTER_TOKEN", "").value == ""
    plain = literal_env("LOG_LEVEL", "debug")
    assert (plain.value, plain.length, plain.credential_rule) == (SEALED_VALUE, 5, None)
    token = literal_env("HF_TOKEN", HF)
    assert token.value == SEALED_VALUE and token.length == len(HF)
    assert (token.credential_rule, token.credential_hint) == ("value:hugging_face_token", "hf_…")


@pytest.mark.parametrize(
    ("name", "value", "kept"),
    [
        ("MIG_STRATEGY", "single", True),
        ("DEFAULT_CONFIG", "a10g-ts", True),
        # The same generic names in a tenant's app, holding something else: sealed.
        ("MIG_STRATEGY", "fast and loose", False),
        ("DEFAULT_CONFIG", '{"db": "postgres://app:hunter2@db/app"}', False),
    ],
)
def test_the_plugins_generic_names_are_kept_only_in_their_own_shape(name, value, kept):
    assert (literal_env(name, value).value == value) is kept


def test_a_credential_under_a_kept_name_is_sealed_too():
    var = literal_env("NVIDIA_VISIBLE_DEVICES", HF)
    assert var.value == SEALED_VALUE and var.credential_rule == "value:hugging_face_token"


def test_stored_entries_written_before_sealing_are_sealed_once():
    old = {"name": "AWS_SECRET_ACCESS_KEY", "value": AWS_SECRET, "value_from": None}
    sealed = seal_stored_env(old)
    assert AWS_SECRET not in json.dumps(sealed)
    assert sealed["credential_rule"] == "name:AWS_SECRET_ACCESS_KEY"
    assert seal_stored_env(sealed) == sealed
    ref = {"name": "X", "value": None, "value_from": "secretKeyRef"}
    assert seal_stored_env(ref) is ref


@pytest.mark.django_db
def test_a_synced_pod_keeps_no_secret_and_pod008_still_fires(tmp_path, personas):
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from posture.services import posture_evaluate
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    snapshot = copy.deepcopy(load_json("small-cluster.json"))
    pod = next(
        o
        for o in snapshot["items"]
        if o["kind"] == "Pod" and o["metadata"]["namespace"] == "team-alpha"
    )
    pod["spec"]["containers"][0]["env"] = [
        {"name": "HF_TOKEN", "value": HF},
        {"name": "AWS_SECRET_ACCESS_KEY", "value": AWS_SECRET},
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
    ]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(snapshot))
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="lab"), paths=[path])
    posture_evaluate()

    stored = json.dumps([p.data for p in Pod.objects.all()])
    assert HF not in stored and AWS_SECRET not in stored and HF[3:12] not in stored
    assert "compute,utility" in stored
    (finding,) = Finding.objects.filter(check_id="POD-008", status="open")
    (entry,) = finding.evidence["containers"]
    variables = {v["name"]: v for v in entry["variables"]}
    assert variables["HF_TOKEN"]["hint"] == "hf_…"
    assert variables["HF_TOKEN"]["value_length"] == len(HF)
    assert variables["AWS_SECRET_ACCESS_KEY"]["rule"] == "name:AWS_SECRET_ACCESS_KEY"
