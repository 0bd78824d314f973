"""The live read (the official kubernetes client against a Kubernetes API on 127.0.0.1): a NUL
the API server accepts (a pod annotation, a ConfigMap's data, an env value) is removed
and said on the run, by a full list and by a watch re-sync, so a tenant cannot hold back the
sync (PostgreSQL stores no NUL). DB-agnostic: the suite runs on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import json

import pytest

from inventory.models import Pod
from inventory.services import cluster_sync
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import cluster_get_or_create
from inventory.sync_summary import sync_run_summary
from tests.conftest import load_json
from tests.kubeapi import FakeKubeAPI

pytestmark = pytest.mark.django_db
NOTE = "example.com/note"


def world(nul: bool) -> list[dict]:
    objects = copy.deepcopy(load_json("small-cluster.json")["items"])
    for obj in objects if nul else []:
        if obj["metadata"]["name"] == "inference-0":
            obj["metadata"]["annotations"] = {NOTE: "tenant\x00text"}
            obj["spec"]["containers"][0]["env"] = [{"name": "X", "value": "a\x00"}]
        elif obj["metadata"]["name"] == "app-settings":
            obj["data"]["LOG_LEVEL"] = "debug\x00"
    return objects


def source(api: FakeKubeAPI, tmp_path) -> KubeSource:
    return KubeSource(
        kubeconfig=str(api.kubeconfig(tmp_path)),
        context="fake",
        settings=KubeSettings(page_size=2, read_timeout=5.0, watch_seconds=1),
    )


def nul_warning(run) -> str:
    [warning] = [w for w in run.warnings if "NUL" in w]
    return warning


def test_a_full_list_reads_a_tenants_nul_as_u_fffd_and_says_where(tmp_path, settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 0
    with FakeKubeAPI(world(nul=True)) as api:
        cluster = cluster_get_or_create(name="live")
        run = cluster_sync(cluster=cluster, source=source(api, tmp_path))
    assert run.status == "succeeded" and run.mode == "full"
    warning = nul_warning(run)
    assert warning.startswith("3 strings read held a NUL byte")
    assert "Pod beta-prod/inference-0 metadata.annotations (one key)" in warning
    assert "Pod beta-prod/inference-0 spec.containers[0].env[0].value" in warning
    assert "ConfigMap team-alpha/app-settings data (one key)" in warning
    assert "tenant" not in warning and "debug" not in warning
    assert "3 strings read held a NUL byte" in sync_run_summary(run)
    pod = Pod.objects.get(cluster=cluster, name="inference-0")
    assert "\\u0000" not in json.dumps(pod.data)


def test_a_watch_resync_reads_a_new_nul_as_u_fffd_and_replaces_the_last_state(tmp_path, settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24
    with FakeKubeAPI(world(nul=False)) as api:
        cluster = cluster_get_or_create(name="live")
        first = cluster_sync(cluster=cluster, source=source(api, tmp_path))
        assert first.mode == "full" and not [w for w in first.warnings if "NUL" in w]
        api.replace_objects(world(nul=True))
        cluster.refresh_from_db()
        run = cluster_sync(cluster=cluster, source=source(api, tmp_path))
    assert (run.status, run.mode) == ("succeeded", "watch")
    warning = nul_warning(run)
    assert "Pod beta-prod/inference-0 metadata.annotations (one key)" in warning
    assert run.changes["pods"]["updated"] == 1
