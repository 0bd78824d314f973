"""POD-007 on a fresh install: the seed tenant classes require images pinned by digest (DESIGN §2
"images from approved registries, pinned by digest"), so a tag-only tenant image is reported
without anyone editing a class first; registries stay open (the organisation's are not known)."""

from __future__ import annotations

import copy
import json

import pytest

from posture.models import Finding
from tenants.models import TrustClass
from tenants.policy import DEFAULT_TRUST_CLASSES
from tests.conftest import load_json

pytestmark = pytest.mark.django_db

DIGEST = "registry.example.internal/alpha/trainer@sha256:" + "b" * 64


def test_the_migrated_seed_classes_are_the_default_trust_classes():
    """What the migrations leave (0002, then 0008's digest flag) is what tenants.policy and the
    posture fallbacks call the seed classes, field by field."""
    rows = {c.slug: c for c in TrustClass.objects.all()}
    assert set(rows) == {d["slug"] for d in DEFAULT_TRUST_CLASSES}
    for data in DEFAULT_TRUST_CLASSES:
        row = rows[data["slug"]]
        for field, value in data.items():
            stored = getattr(row, field)
            expected = list(value) if isinstance(value, tuple) else value
            assert stored == expected, (data["slug"], field)
    assert {s for s, r in rows.items() if r.require_image_digest} == {
        "internal_trusted",
        "internal",
        "external",
        "sensitive",
    }
    assert not any(r.approved_registries for r in rows.values())


def test_a_new_class_requires_a_digest_unless_told_otherwise():
    assert TrustClass.objects.create(slug="partners", name="Partners").require_image_digest


def test_fresh_install_reports_a_tag_only_image_of_an_internal_tenant(tmp_path, personas):
    """Migrations only, no demo, no class edited: alpha (internal) runs one pod pinned by
    digest and one by tag; POD-007 names the tag, not the digest."""
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from posture.services import posture_evaluate
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    document = load_json("small-tenants.json")
    tenants_apply(specs=parse_tenants_document(document))
    snapshot = copy.deepcopy(load_json("small-cluster.json"))
    pinned = next(i for i in snapshot["items"] if i["metadata"].get("name") == "trainer-0")
    assert pinned["spec"]["containers"][0]["image"] == DIGEST
    tagged = copy.deepcopy(pinned)
    tagged["metadata"].update(name="notebook-0", uid="uid-team-alpha-notebook-0")
    tagged["spec"]["containers"][0]["image"] = "registry.example.internal/alpha/notebook:2.1"
    snapshot["items"].append(tagged)
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(snapshot))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="lab"), paths=[path])
    posture_evaluate()

    alpha = Finding.objects.filter(check_id="POD-007", status="open", tenants__slug="alpha")
    assert [f.subject_name for f in alpha] == ["notebook-0"]
    evidence = alpha.get().evidence
    (entry,) = evidence["containers"]
    assert entry["image"] == "registry.example.internal/alpha/notebook:2.1"
    assert entry["problems"] == ["not pinned by an @sha256: digest"]
    assert evidence["require_image_digest"] is True and evidence["approved_registries"] == []


def test_the_posture_fallbacks_judge_images_as_the_seeded_rows():
    """Without registry rows (pure inputs), unclassified pods are judged by the seed `external`
    class and platform pods by the seed `platform` class: the same image policy as a fresh
    install's rows, so a tag-only image in a namespace nobody claims is POD-007 there too."""
    from posture.rules.common import platform_trust_class
    from tests.posture.builders import inputs, pod, run

    world = inputs(pods=(pod("stray", "runner"),))
    assert world.unclassified_class is None  # the fallback, not a row
    assert world.unclassified.trust_class.require_image_digest is True
    assert platform_trust_class(world).require_image_digest is False
    (draft,) = run("POD-007", world)
    assert set(draft.tenants) == {"unclassified"}
    (entry,) = draft.evidence["containers"]
    assert entry["problems"] == ["not pinned by an @sha256: digest"]
