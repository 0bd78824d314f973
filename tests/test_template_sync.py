"""A workload with no pod running is judged from its template, through sync_cluster + score:
the finding is filed under the workload and keeps its identity when pods come and go."""

from __future__ import annotations

import io
import json

import pytest
import yaml
from django.core.management import call_command

from posture.models import Finding

pytestmark = pytest.mark.django_db

NS = "team-night"
TENANTS = {
    "tenants": [
        {"slug": "night", "name": "Team Night", "trust_class": "internal", "namespaces": [NS]}
    ]
}


def _template(containers, **spec):
    return {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": containers, **spec}}


NIGHTLY = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "nightly-export", "namespace": NS},
    "spec": {
        "schedule": "0 2 * * *",
        "jobTemplate": {
            "spec": {
                "template": _template(
                    [
                        {
                            "name": "export",
                            "image": "registry.example.com/export:3",
                            "securityContext": {"privileged": True},
                        }
                    ]
                )
            }
        },
    },
}
IDLE = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "probe", "namespace": NS},
    "spec": {
        "replicas": 0,
        "template": _template(
            [{"name": "probe", "image": "registry.example.com/probe:1"}], hostPID=True
        ),
    },
}
REPLICA_SET = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {
        "name": "probe-5d8f7",
        "namespace": NS,
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "probe", "controller": True}
        ],
    },
}
PROBE_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "probe-5d8f7-abcde",
        "namespace": NS,
        "labels": {"app": "x", "pod-template-hash": "5d8f7"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "probe-5d8f7",
                "controller": True,
            }
        ],
    },
    "spec": {
        "hostPID": True,
        "nodeName": "cpu-1",
        "containers": [{"name": "probe", "image": "registry.example.com/probe:1"}],
    },
    "status": {"phase": "Running"},
}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _sync_and_score(tmp_path, *items) -> None:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}))
    _run("sync_cluster", "--cluster", "lab", "--snapshot", str(path))
    _run("score", "--cluster", "lab")


def _open(check_id: str) -> list[Finding]:
    return list(Finding.objects.filter(check_id=check_id, status=Finding.Status.OPEN))


def test_workloads_with_no_pod_are_judged_from_their_templates(tmp_path):
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text(yaml.safe_dump(TENANTS))
    _run("apply_tenants", str(tenants))

    _sync_and_score(tmp_path, NAMESPACE, NIGHTLY, IDLE, REPLICA_SET)
    [privileged] = _open("POD-001")
    assert (privileged.subject_kind, privileged.subject_namespace, privileged.subject_name) == (
        "CronJob",
        NS,
        "nightly-export",
    )
    assert privileged.evidence["from_template"] is True
    assert privileged.evidence["pods"] == [] and privileged.evidence["replicas"] == 1
    assert [t.slug for t in privileged.tenants.all()] == ["night"]
    [host_pid] = _open("POD-002")
    assert (host_pid.subject_kind, host_pid.subject_name) == ("Deployment", "probe")
    assert host_pid.evidence["from_template"] is True and host_pid.evidence["replicas"] == 0

    # The Deployment scaled up: its pod is judged, once, and the finding is the same one.
    scaled = {**IDLE, "spec": {**IDLE["spec"], "replicas": 1}}
    _sync_and_score(tmp_path, NAMESPACE, NIGHTLY, scaled, REPLICA_SET, PROBE_POD)
    [from_pod] = _open("POD-002")
    assert from_pod.pk == host_pid.pk and from_pod.first_seen == host_pid.first_seen
    assert "from_template" not in from_pod.evidence
    assert [p["pod"] for p in from_pod.evidence["pods"]] == [f"{NS}/probe-5d8f7-abcde"]
    assert from_pod.evidence["replicas"] == 1
    assert _open("POD-001")[0].pk == privileged.pk
