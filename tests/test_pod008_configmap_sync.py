"""POD-008 for a credential a tenant pod reads from a ConfigMap, end to end: the sync keeps no
value of the ConfigMap (only each key's facts), the finding names the container, the variable,
the ConfigMap and key, and the value is nowhere in clear: not in the database, the API, the
exports. A watch that sees a pod newly reading a ConfigMap the last full list did not keep
lists everything, so the credential is judged on that run."""

from __future__ import annotations

import copy
import io
import json
import random
import string

import pytest
from django.core.management import call_command

from inventory.models import ClusterObject
from inventory.services import cluster_sync, cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.models import Finding
from posture.services import posture_evaluate
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.conftest import api_client, content, load_json
from tests.kubeapi import FakeKubeAPI
from tests.test_watch_sync import source

pytestmark = pytest.mark.django_db
_rng = random.Random(8)
HF = "hf_" + "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(34))
TOKEN = "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(32))


def _pod(name: str, container: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-alpha", "resourceVersion": "1"},
        "spec": {"nodeName": "gpu-ts-1", "containers": [container]},
        "status": {"phase": "Running"},
    }


def _decode_worker() -> dict:
    return _pod(
        "llama-decode-0",
        {
            "name": "decode",
            "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0",
            "env": [
                {
                    "name": "HF_TOKEN",
                    "valueFrom": {"configMapKeyRef": {"name": "llama-config", "key": "HF_TOKEN"}},
                }
            ],
            "envFrom": [{"configMapRef": {"name": "app-env"}, "prefix": "APP_"}],
        },
    )


def _configmap(name: str, data: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "team-alpha", "resourceVersion": "1"},
        "data": data,
    }


def _world(*extra: dict) -> list[dict]:
    return [*copy.deepcopy(load_json("small-cluster.json")["items"]), *extra]


def _clear_in(text: str) -> bool:
    return HF in text or HF[3:15] in text or TOKEN in text or TOKEN[:12] in text


def test_the_credential_is_reported_and_its_value_is_nowhere_in_clear(tmp_path, personas):
    objects = _world(
        _decode_worker(),
        _configmap("llama-config", {"HF_TOKEN": HF, "MODEL": "meta-llama/Llama-3.1-8B"}),
        _configmap("app-env", {"API_TOKEN": TOKEN, "LOG_LEVEL": "info"}),
    )
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="lab"), paths=[path])
    posture_evaluate()

    (finding,) = Finding.objects.filter(check_id="POD-008", status="open")
    (entry,) = finding.evidence["containers"]
    assert entry["container"] == "decode"
    found = {v["name"]: v for v in entry["variables"]}
    assert (found["HF_TOKEN"]["configmap"], found["HF_TOKEN"]["key"]) == (
        "llama-config",
        "HF_TOKEN",
    )
    assert (found["APP_API_TOKEN"]["configmap"], found["APP_API_TOKEN"]["key"]) == (
        "app-env",
        "API_TOKEN",
    )
    assert "HF_TOKEN from ConfigMap llama-config" in finding.title

    kept = ClusterObject.objects.get(kind="env_configmap", name="llama-config").data
    assert kept["keys"] == ["HF_TOKEN", "MODEL"]
    dump = io.StringIO()
    call_command("dumpdata", stdout=dump)
    assert not _clear_in(dump.getvalue())

    client = api_client(personas["security_lead"])
    listed = client.get("/api/v1/findings/", {"check": "POD-008"})
    assert listed.status_code == 200 and "llama-config" in listed.content.decode()
    assert not _clear_in(listed.content.decode())
    for fmt in ("json", "csv", "sarif"):
        exported = client.get("/api/v1/findings/export/", {"format": fmt})
        assert exported.status_code == 200
        assert not _clear_in(content(exported).decode())
    for fmt in ("json", "csv", "sarif", "openreports"):
        out = io.StringIO()
        call_command("export_findings", "--format", fmt, stdout=out, stderr=io.StringIO())
        assert "llama-config" in out.getvalue() and not _clear_in(out.getvalue())


def test_a_watch_seeing_a_pod_newly_read_a_configmap_lists_everything(tmp_path, small_world):
    config = _configmap("llama-config", {"HF_TOKEN": HF})
    with FakeKubeAPI(_world(config)) as api:
        cluster = cluster_get_or_create(name="live")
        assert cluster_sync(cluster=cluster, source=source(api, tmp_path)).mode == "full"
        assert not ClusterObject.objects.filter(cluster=cluster, kind="env_configmap")
        api.replace_objects(_world(config, _decode_worker()))
        run = cluster_sync(cluster=cluster, source=source(api, tmp_path))
    assert (run.status, run.mode) == ("succeeded", "full")
    posture_evaluate()
    finding = Finding.objects.get(cluster=cluster, check_id="POD-008", status="open")
    (entry,) = finding.evidence["containers"]
    assert [v["name"] for v in entry["variables"]] == ["HF_TOKEN"]


def test_a_watch_seeing_a_configmap_a_stored_pod_waited_for_lists_everything(tmp_path, small_world):
    """The pod was listed before its ConfigMap existed (kept by no full list), and the watch
    sees the ConfigMap alone: a full list would keep it, so the watch lists everything."""
    config = _configmap("llama-config", {"HF_TOKEN": HF})
    with FakeKubeAPI(_world(_decode_worker())) as api:
        cluster = cluster_get_or_create(name="live")
        assert cluster_sync(cluster=cluster, source=source(api, tmp_path)).mode == "full"
        assert not ClusterObject.objects.filter(cluster=cluster, kind="env_configmap")
        api.replace_objects(_world(_decode_worker(), config))
        run = cluster_sync(cluster=cluster, source=source(api, tmp_path))
    assert (run.status, run.mode) == ("succeeded", "full")
    assert any("team-alpha/llama-config, which a stored pod reads" in w for w in run.warnings)
    posture_evaluate()
    finding = Finding.objects.get(cluster=cluster, check_id="POD-008", status="open")
    (entry,) = finding.evidence["containers"]
    assert [v["name"] for v in entry["variables"]] == ["HF_TOKEN"]
