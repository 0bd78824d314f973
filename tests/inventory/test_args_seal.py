"""Credentials on a container's command line are judged (POD-008) but never stored: the sync
replaces the secret part of each element POD-008 would report with a sealed marker holding what
the finding says (how it was given, the rule, the vendor's public prefix, the length), and keeps
every other word as given. Values are made up here."""

from __future__ import annotations

import copy
import json

import pytest
from django.db import connection

from inventory.credential_args import argument_credentials
from inventory.env_seal import seal_stored_arguments, stored_arguments
from posture.action_words import credentials_fix
from tests.conftest import load_json
from tests.posture.test_pod008_command_line import KEY_ID, LOUD, SECRETS

HF = "hf_" + "Zq4mT8vXr2LpN6sWc1YbK9dJ3hGfA7eU"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9Q2LmT4vA"
SCRIPT = f"aws configure set aws_secret_access_key {AWS_SECRET} && python serve.py --ip=0.0.0.0"


@pytest.mark.parametrize(("command", "args", "expected"), LOUD.values(), ids=LOUD.keys())
def test_the_stored_command_line_gives_pod008_the_same_hits_and_no_secret(command, args, expected):
    sealed = stored_arguments(command, args)
    assert argument_credentials(*sealed) == argument_credentials(command, args)
    assert not any(secret[4:14] in json.dumps(sealed) for secret in SECRETS if secret != KEY_ID)
    assert stored_arguments(*sealed) == sealed  # sealing twice changes nothing


def test_only_the_secret_word_of_a_script_goes():
    (command, args) = stored_arguments(("sh", "-c"), (SCRIPT,))
    assert command == ("sh", "-c")
    (script,) = args
    assert AWS_SECRET not in script
    assert script.startswith("aws configure set aws_secret_access_key <credential-not-stored:")
    assert script.endswith(" && python serve.py --ip=0.0.0.0")


def test_words_the_checks_read_are_kept_and_a_notebook_token_is_only_set():
    args = (
        "--ip=0.0.0.0",
        "--dashboard-host",
        "0.0.0.0",  # noqa: S104 (a flag value, nothing binds)
        "--NotebookApp.token=9f8e7d6c5b4a",
        "--ServerApp.token=",
        "--config-file=/etc/nvidia/config.yaml",
        "--password",
        "hunter2hunter2",
    )
    assert stored_arguments((), args)[1] == (
        "--ip=0.0.0.0",
        "--dashboard-host",
        "0.0.0.0",  # noqa: S104 (a flag value, nothing binds)
        "--NotebookApp.token=<set>",
        "--ServerApp.token=",
        "--config-file=/etc/nvidia/config.yaml",
        "--password",
        "<set>",
    )


def test_rows_stored_before_sealing_are_sealed_wherever_a_container_is():
    stored = {
        "template": {
            "containers": [{"name": "a", "command": ["python"], "args": ["--hf-token", HF]}]
        },
        "before": [{"command": [], "args": [f"--hf-token={HF}", "--port=8888"]}],
    }
    sealed = seal_stored_arguments(stored)
    assert HF not in json.dumps(sealed)
    assert sealed["before"][0]["args"][1] == "--port=8888"
    assert seal_stored_arguments(sealed) == sealed


@pytest.mark.parametrize(
    ("containers", "fix"),
    [
        ([{"variables": [{"name": "HF_TOKEN"}]}], "Move literal credentials out of the env of"),
        (
            [{"variables": [], "arguments": [{}]}],
            "Move literal credentials out of the command line of",
        ),
        (
            [{"variables": [{"name": "X"}]}, {"variables": [], "arguments": [{}]}],
            "Move literal credentials out of the env and command line of",
        ),
    ],
)
def test_the_action_says_where_the_credentials_are(containers, fix):
    assert credentials_fix({"containers": containers}) == fix


def _controller(kind: str, name: str, containers: list) -> dict:
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": containers}}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "team-alpha", "uid": f"uid-{name}"},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": template},
    }


def test_a_synced_command_line_reaches_no_table_and_pod008_still_fires(tmp_path, personas):
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from posture.models import Finding
    from posture.services import posture_evaluate
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    snapshot = copy.deepcopy(load_json("small-cluster.json"))
    pod = next(
        o
        for o in snapshot["items"]
        if o["kind"] == "Pod" and o["metadata"]["namespace"] == "team-alpha"
    )
    containers = [
        {
            "name": "train",
            "image": "registry.example/train:1",
            "command": ["python", "train.py", "--hf-token", HF],
        },
        {"name": "setup", "image": "amazon/aws-cli:2", "command": ["sh", "-c", SCRIPT]},
    ]
    pod["spec"]["containers"] = copy.deepcopy(containers)
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "train", "controller": True}
    ]
    snapshot["items"] += [
        _controller("Deployment", "train", copy.deepcopy(containers)),
        _controller("Deployment", "idle", copy.deepcopy(containers)),
        _controller("DaemonSet", "agent", copy.deepcopy(containers)),
    ]
    raw_title = _raw_title(pod)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(snapshot))
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    cluster = cluster_get_or_create(name="lab")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])  # a second run: drift, changes
    posture_evaluate()

    for table in connection.introspection.table_names():
        with connection.cursor() as cursor:
            cursor.execute(f'SELECT * FROM "{table}"')  # noqa: S608 (table names from Django)
            dumped = repr(cursor.fetchall())
        assert HF not in dumped and HF[3:15] not in dumped, table
        assert AWS_SECRET not in dumped and AWS_SECRET[:12] not in dumped, table
    titles = set(
        Finding.objects.filter(check_id="POD-008", status="open").values_list("title", flat=True)
    )
    assert (
        raw_title.replace("Pod team-alpha/" + pod["metadata"]["name"], "")
        in {t.split(" of ", 1)[0] + " of " + t.split(" of ", 1)[1].split(" ", 2)[2] for t in titles}
        or raw_title in titles
    ), (raw_title, titles)


def _raw_title(pod: dict) -> str:
    """POD-008's title judged from the pod as the API gives it (no sealing on the way)."""
    from inventory.snapshot import Container, Pod
    from tests.posture.builders import inputs, run, tenant

    containers = tuple(
        Container(name=c["name"], image=c["image"], command=tuple(c["command"]))
        for c in pod["spec"]["containers"]
    )
    judged = Pod(
        namespace="team-alpha",
        name="train",
        owner_kind="Deployment",
        owner_name="train",
        containers=containers,
    )
    team = tenant("alpha", namespaces=("team-alpha",))
    (draft,) = run("POD-008", inputs(pods=(judged,), tenants=(team,)))
    return draft.title
