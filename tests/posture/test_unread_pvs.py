"""A snapshot whose pods name claims but that holds no PersistentVolume did not judge those
claims (a Bound claim always has a PV): the run says so, and a re-sync from it keeps the POD-003
findings that came through a claim as they were, saying why, while the pods' own hostPath
volumes are judged as ever. A later sync that reads the PVs judges the claims again."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from inventory.models import SyncRun
from posture.models import Finding
from tests.conftest import api_client
from tests.posture.test_rules_host_paths import _claiming_pod, _pv
from tests.posture.test_unread_kinds import COREDNS

pytestmark = pytest.mark.django_db

TENANTS = {
    "tenants": [
        {"slug": "team-a", "name": "Team A", "trust_class": "external", "namespaces": ["team-a"]}
    ]
}


def _own_host_path(name: str, path: str) -> dict[str, Any]:
    pod = _claiming_pod("unused")
    pod["metadata"]["name"] = name
    pod["spec"]["volumes"] = [{"name": "data", "hostPath": {"path": path}}]
    return pod


def _world(*, pvs: bool, own: bool = True) -> list[dict[str, Any]]:
    claimed = _claiming_pod("data")
    claimed["metadata"]["name"] = "claimed"
    objects = [COREDNS, claimed]
    if own:
        objects.append(_own_host_path("own", "/proc"))
    if pvs:
        objects.append(_pv("pv-kubelet", "data", path="/var/lib/kubelet"))
    return objects


def _sync(tmp_path, name: str, objects: list[dict[str, Any]]) -> SyncRun:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    out = io.StringIO()
    call_command("sync_cluster", cluster="lab", snapshot=[str(path)], stdout=out, stderr=out)
    call_command("score", stdout=out, stderr=out)
    return SyncRun.objects.order_by("-id")[0]


def _pod003(name: str) -> Finding:
    return Finding.objects.get(check_id="POD-003", subject_name=name)


@pytest.fixture(autouse=True)
def tenants(tmp_path):
    (tmp_path / "tenants.yaml").write_text(yaml.safe_dump(TENANTS))
    call_command("apply_tenants", str(tmp_path / "tenants.yaml"), stdout=io.StringIO())


def test_a_snapshot_naming_claims_without_pvs_says_they_were_not_judged(tmp_path):
    run = _sync(tmp_path, "nopv", _world(pvs=False))
    assert "PersistentVolume" in run.kinds_unread
    assert any("but no PersistentVolume" in w and "POD-003" in w for w in run.warnings)
    # Nothing guessed for the claim; the pod's own hostPath is judged.
    assert not Finding.objects.filter(check_id="POD-003", subject_name="claimed").exists()
    assert _pod003("own").status == "open"


def test_no_claim_named_no_pv_warning(tmp_path):
    run = _sync(tmp_path, "bare", [COREDNS, _own_host_path("own", "/proc")])
    assert "PersistentVolume" not in run.kinds_unread
    assert not any("PersistentVolume" in w for w in run.warnings)


def test_a_resync_without_pvs_keeps_claim_findings_and_judges_hostpaths(tmp_path, personas):
    _sync(tmp_path, "full", _world(pvs=True))
    claimed, own = _pod003("claimed"), _pod003("own")
    assert claimed.status == own.status == "open"
    # The export lacks the PVs, and the pod's own hostPath was removed meanwhile.
    _sync(tmp_path, "nopv", _world(pvs=False, own=False))
    kept = _pod003("claimed")
    assert kept.status == "open" and kept.last_seen == claimed.last_seen
    assert _pod003("own").status == "resolved"  # judged: its hostPath is gone
    body = api_client(personas["security_lead"]).get(f"/api/v1/findings/{kept.pk}/").json()
    assert body["not_rejudged"].startswith(
        "not re-judged in the last sync: it read no PersistentVolume"
    )
    # The PVs read again: the claim is judged again (its PV now a provisioner's directory).
    fixed = [o for o in _world(pvs=False) if o["metadata"]["name"] != "own"]
    fixed.append(_pv("pv-data", "data", path="/opt/local-path-provisioner/pvc-1"))
    run = _sync(tmp_path, "fixed", fixed)
    assert "PersistentVolume" not in run.kinds_unread
    assert _pod003("claimed").status == "resolved"


def test_a_claim_finding_resolves_when_its_pod_is_gone_pvs_read_or_not(tmp_path):
    """Held back only while its workload is there: with the pod gone no claim hands it any
    path, so an export without PVs cannot keep the finding open (rtself10 k55)."""
    _sync(tmp_path, "full", _world(pvs=True))
    assert _pod003("claimed").status == "open"
    gone = [o for o in _world(pvs=False) if o["metadata"]["name"] != "claimed"]
    still = _claiming_pod("scratch")  # another pod names a claim: the PVs were not read
    still["metadata"]["name"] = "still-claiming"
    run = _sync(tmp_path, "gone", [*gone, still])
    assert "PersistentVolume" in run.kinds_unread
    assert _pod003("claimed").status == "resolved"
