"""Migration inventory.0035: command-line credentials stored before the sync sealed them are
sealed in place, in pods and in workload templates (ClusterObject), every other word kept.
Run with Django's migration executor: back to 0034, old rows, forward."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from inventory.credential_args import SEALED_PREFIX
from tests.migration_steps import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [("inventory", "0034_node_uid_of_holdings")]
AFTER = [("inventory", "0035_seal_command_line_credentials")]
# Made up, of the vendors' shapes (never real credentials).
HF = "hf_" + "Qm7xT2vLp9RzK4wN8cY3bH6dJ1fG5sA0eU"
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ" + "8v3kLm2N"


def containers() -> list[dict]:
    return [
        {
            "name": "train",
            "image": "registry.example.com/train:1",
            "command": ["python", "finetune.py"],
            "args": ["--hf-token", HF, "--epochs", "3"],
        },
        {
            "name": "setup",
            "image": "amazon/aws-cli:2.17.0",
            "command": ["sh", "-c", f"aws configure set aws_secret_access_key {AWS} && sync.sh"],
        },
    ]


@pytest.fixture
def old_apps():
    apps = migrate(BEFORE)
    yield apps
    migrate_to_latest()


def test_stored_pods_and_templates_lose_the_secret_and_keep_the_rest(old_apps):
    cluster = old_apps.get_model("inventory", "Cluster").objects.create(name="lab")
    pod = old_apps.get_model("inventory", "Pod").objects.create(
        cluster=cluster,
        namespace="team-a",
        name="finetune-0",
        phase="Running",
        data={"namespace": "team-a", "name": "finetune-0", "containers": containers()},
        changed_at=timezone.now(),
    )
    template = old_apps.get_model("inventory", "ClusterObject").objects.create(
        cluster=cluster,
        kind="workload",
        name="team-a/Deployment/finetune",
        data={"kind": "Deployment", "template": {"containers": containers()}},
    )
    apps = migrate(AFTER)
    stored = {
        "pod": apps.get_model("inventory", "Pod").objects.get(pk=pod.pk).data,
        "template": apps.get_model("inventory", "ClusterObject").objects.get(pk=template.pk).data,
    }
    for data in stored.values():
        text = json.dumps(data)
        assert HF not in text and AWS not in text
        assert text.count(SEALED_PREFIX) == 2  # the token and the AWS secret, once each
        # Every other word is kept: the program, its options, the rest of the script.
        assert "finetune.py" in text and "--epochs" in text and "&& sync.sh" in text
