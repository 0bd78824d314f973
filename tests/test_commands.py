"""The CLI of DESIGN §9: summaries, data on stdout, clear errors and non-zero exits."""

from __future__ import annotations

import csv
import io
import json

import pytest
import yaml
from django.core.management import CommandError, call_command

from inventory.models import Node, SyncRun
from tenants.models import Tenant
from tests.conftest import load_json, world_snapshot_path

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def tenants_file(tmp_path):
    path = tmp_path / "tenants.yaml"
    path.write_text(yaml.safe_dump(load_json("small-tenants.json")))
    return path


def test_apply_tenants_is_idempotent(tenants_file, personas):
    out, _ = run("apply_tenants", str(tenants_file))
    assert "2 created" in out
    out, _ = run("apply_tenants", str(tenants_file))
    assert "0 created, 0 updated, 2 unchanged" in out
    alpha = Tenant.objects.get(slug="alpha")
    assert alpha.trust_class.slug == "internal"
    assert list(alpha.viewers.values_list("username", flat=True)) == ["viewer-alpha"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("tenants: [{slug: Bad Slug, name: x, trust_class: internal}]", "slug"),
        ("tenants: [{slug: ok, name: x, trust_class: nonesuch}]", "unknown trust class"),
        ("tenants: [{slug: ok, name: x, trust_class: internal, extra: 1}]", "unknown field"),
        ("tenants: {not: a list}", "tenants"),
        ("tenants: [\n  - {", "not valid YAML"),
        (
            "tenants: [{slug: a, name: A, trust_class: internal, namespaces: [x]},"
            " {slug: b, name: B, trust_class: internal, namespaces: [x]}]",
            "claimed by both",
        ),
    ],
)
def test_apply_tenants_refuses_bad_files_and_changes_nothing(tmp_path, content, message):
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(CommandError, match=message):
        run("apply_tenants", str(path))
    assert not Tenant.objects.exists()


def test_sync_score_export_round_trip(tenants_file, personas, tmp_path):
    run("apply_tenants", str(tenants_file))
    out, _ = run("sync_cluster", "--cluster", "lab", "--snapshot", str(world_snapshot_path()))
    assert "succeeded" in out and "Node 2" in out
    out, _ = run("score")
    # Each tenant with its risk points and score, most risk first.
    lines = [line.split() for line in out.splitlines() if " risk " in line]
    risks = [float(parts[2].replace(",", "")) for parts in lines]
    assert {"alpha", "beta"} <= {parts[0] for parts in lines}
    assert risks == sorted(risks, reverse=True) and all(parts[3] == "score" for parts in lines)
    data, err = run("export_findings", "--format", "json", "--tenant", "beta", "--status", "open")
    findings = json.loads(data)
    # --tenant means "affects this tenant": shared findings name both tenants.
    assert findings and all("beta" in f["tenants"] for f in findings)
    assert any(f["tenants"] == ["alpha", "beta"] for f in findings)
    assert f"{len(findings)} findings exported" in err
    data, _ = run("export_findings", "--format", "csv", "--cluster", "lab")
    rows = list(csv.DictReader(io.StringIO(data)))
    assert {r["check"] for r in rows} >= {"SHARE-001", "POD-001", "K8S-001"}


def test_sync_of_a_directory(tmp_path, personas):
    folder = tmp_path / "snap"
    folder.mkdir()
    (folder / "cluster.json").write_text(world_snapshot_path().read_text())
    run("sync_cluster", "--cluster", "lab", "--snapshot", str(folder))
    assert Node.objects.filter(cluster__name="lab").count() == 2


def test_sync_of_a_missing_file_fails_clearly_and_is_recorded(tmp_path):
    with pytest.raises(CommandError, match="previous inventory is unchanged"):
        run("sync_cluster", "--cluster", "lab", "--snapshot", str(tmp_path / "nope.json"))
    failed = SyncRun.objects.get(cluster__name="lab")
    assert failed.status == "failed" and "nope.json" in failed.error


def test_sync_rejects_a_bad_cluster_name():
    with pytest.raises(CommandError, match="cluster name"):
        run("sync_cluster", "--cluster", "Bad Name!", "--snapshot", str(world_snapshot_path()))


def test_score_of_an_unknown_cluster():
    with pytest.raises(CommandError, match="no cluster named"):
        run("score", "--cluster", "ghost")
