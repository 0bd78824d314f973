"""The shared harness (the root conftest.py) runs on-commit work as production does for every
suite collected beside tests/ (and for ours, marked `commit_as_production`): a suite that syncs
and then reads the findings finds them without running `score`, as DESIGN §5 says ("every change
that can move a score ... re-scores the clusters it touches at once"), although pytest-django's
wrapping transaction never commits. A test that captures the callbacks itself still gets them."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import transaction

from posture.models import PostureRun
from tests.conftest import api_client, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.commit_as_production]

TENANTS = """
tenants:
  - slug: alpha
    name: Team Alpha
    trust_class: internal
    namespaces: [team-alpha]
"""
NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "gpu-1", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
    "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "trainer", "namespace": "team-alpha", "uid": "uid-trainer"},
    "spec": {
        "nodeName": "gpu-1",
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "securityContext": {"privileged": True},
                "resources": {"limits": {"nvidia.com/gpu": "1"}},
            }
        ],
    },
    "status": {"phase": "Running"},
}


def _sync(tmp_path: Path) -> None:
    (tmp_path / "tenants.yaml").write_text(TENANTS)
    call_command("apply_tenants", str(tmp_path / "tenants.yaml"), stdout=StringIO())
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-alpha"}}
    snapshot = {"apiVersion": "v1", "kind": "List", "items": [namespace, NODE, POD]}
    (tmp_path / "prod.json").write_text(json.dumps(snapshot))
    quiet = {"stdout": StringIO(), "stderr": StringIO()}
    call_command(
        "sync_cluster", "--cluster", "prod", "--snapshot", str(tmp_path / "prod.json"), **quiet
    )


def test_a_sync_is_scored_without_running_score(tmp_path):
    _sync(tmp_path)
    lead = api_client(make_user("lead", "security_lead"))
    found = lead.get("/api/v1/findings/", {"tenant": "alpha", "check": "POD-001"}).json()
    assert found["count"] == 1
    tenant = lead.get("/api/v1/tenants/").json()["results"][0]
    assert tenant["scored"] is True and tenant["risk"] > 0


def test_a_test_capturing_the_callbacks_gets_them_and_nothing_runs_before(
    tmp_path, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        _sync(tmp_path)
    assert callbacks, "the re-score waits for the commit the test controls"
    assert not PostureRun.objects.exists()
    # Left to the test: nothing runs at the next transaction's end either.
    with transaction.atomic():
        pass
    assert not PostureRun.objects.exists()
