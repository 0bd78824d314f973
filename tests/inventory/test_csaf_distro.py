"""Distribution advisories (Red Hat RHSA, SUSE): packages with their own releases, into which
fixes are backported. A node's upstream version is never compared with such a release: what
cannot be paired is said, with the reason. Documents are our own, in the shapes of
oasis-rhsa-2022_0011.json (relationships, NEVRA names, fixed only) and of SUSE's advisories."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest

from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.fixes import fixes
from inventory.patching.status import BELOW_BASELINE, node_patch_status
from tests.realworld import realworld

PACKAGE = "nvidia-container-toolkit-0:1.17.8-1.el9.x86_64"


def rhsa(purl: str | None = None, status: dict | None = None, packages=(PACKAGE,)) -> dict:
    """A Red Hat style advisory: an OS product, package builds, and `default_component_of`
    relationships whose products are listed `fixed` (and nothing `known_affected`)."""
    builds = []
    for name in packages:
        product: dict[str, Any] = {"product_id": name, "name": name}
        if purl:
            product["product_identification_helper"] = {"purl": purl}
        builds.append({"category": "product_version", "name": name, "product": product})
    ids = [f"AppStream-9:{name}" for name in packages]
    return {
        "document": {
            "category": "csaf_security_advisory",
            "csaf_version": "2.0",
            "title": "Important: nvidia-container-toolkit security update",
            "aggregate_severity": {"text": "Important"},
            "tracking": {
                "id": "RHSA-2099:0001",
                "status": "final",
                "version": "1",
                "initial_release_date": "2099-01-01T00:00:00Z",
                "current_release_date": "2099-01-01T00:00:00Z",
            },
        },
        "product_tree": {
            "branches": [
                {
                    "category": "vendor",
                    "name": "Red Hat",
                    "branches": [
                        {
                            "category": "product_name",
                            "name": "Red Hat Enterprise Linux AppStream (v. 9)",
                            "product": {
                                "product_id": "AppStream-9",
                                "name": "Red Hat Enterprise Linux AppStream (v. 9)",
                            },
                        },
                        {"category": "architecture", "name": "x86_64", "branches": builds},
                    ],
                }
            ],
            "relationships": [
                {
                    "category": "default_component_of",
                    "product_reference": name,
                    "relates_to_product_reference": "AppStream-9",
                    "full_product_name": {
                        "product_id": pid,
                        "name": f"{name} as a component of Red Hat Enterprise Linux AppStream",
                    },
                }
                for name, pid in zip(packages, ids, strict=True)
            ],
        },
        "vulnerabilities": [
            {
                "cve": "CVE-2099-1000",
                "product_status": status or {"fixed": ids},
                "threats": [{"category": "impact", "details": "Important"}],
                "remediations": [
                    {
                        "category": "vendor_fix",
                        "details": "Apply this update.",
                        "url": "https://access.redhat.com/errata/RHSA-2099:0001",
                        "product_ids": ids,
                    }
                ],
            }
        ],
    }


def toolkit_node(version: str):
    return {"driver_version": "570.172.08", "container_toolkit_version": version}


@pytest.mark.parametrize(
    "purl", [None, "pkg:rpm/redhat/nvidia-container-toolkit@1.17.8-1.el9?arch=x86_64&epoch=0"]
)
def test_a_distribution_fix_with_no_affected_version_is_not_paired_and_says_why(purl):
    found, unmatched = fixes(parse_advisory(rhsa(purl)))
    assert found == []
    [lost] = unmatched
    assert lost.product_id == f"AppStream-9:{PACKAGE}"
    assert "distribution package nvidia-container-toolkit 1.17.8-1.el9" in lost.reason
    assert "backports" in lost.reason and "not compared" in lost.reason


def test_a_backported_distribution_fix_never_reads_a_node_below_its_own_version():
    # SUSE style: the affected and the fixed build share the upstream version 1.17.4; only the
    # release differs. A node reporting 1.17.4 may run either build.
    affected = "nvidia-container-toolkit-1.17.4-150200.5.8.1.x86_64"
    fixed = "nvidia-container-toolkit-1.17.4-150200.5.11.1.x86_64"
    data = rhsa(packages=(affected, fixed))
    trees = data["product_tree"]["branches"][0]["branches"][1]["branches"]
    trees[0]["product"]["product_identification_helper"] = {
        "purl": "pkg:rpm/suse/nvidia-container-toolkit@1.17.4-150200.5.8.1"
    }
    trees[1]["product"]["product_identification_helper"] = {
        "purl": "pkg:rpm/suse/nvidia-container-toolkit@1.17.4-150200.5.11.1"
    }
    data["vulnerabilities"][0]["product_status"] = {
        "known_affected": [f"AppStream-9:{affected}"],
        "fixed": [f"AppStream-9:{fixed}"],
    }
    found, unmatched = fixes(parse_advisory(data))
    status = node_patch_status(toolkit_node("1.17.4"), found)
    assert status.status != BELOW_BASELINE and status.exposures == ()
    assert status.fixed == ()  # nor read as running the fix
    reasons = " ".join(u.reason for u in unmatched)
    assert "nvidia-container-toolkit 1.17.4-150200.5.11.1" in reasons and "backport" in reasons


def test_a_distribution_fix_above_the_affected_build_still_pairs():
    # An affected build 1.17.7-1.el9 and a fixed 1.17.8-1.el9: the upstream versions differ,
    # the node at 1.17.7 is below the fix.
    affected = "nvidia-container-toolkit-0:1.17.7-1.el9.x86_64"
    data = rhsa(packages=(affected, PACKAGE))
    data["vulnerabilities"][0]["product_status"] = {
        "known_affected": [f"AppStream-9:{affected}"],
        "fixed": [f"AppStream-9:{PACKAGE}"],
    }
    found, _ = fixes(parse_advisory(data))
    assert [(f.affected.op, f.affected.version, f.fixed_version) for f in found] == [
        ("==", "1.17.7", "1.17.8")
    ]


def test_the_real_rhsa_pairs_nothing_and_says_why():
    data = json.loads(realworld("csaf", "oasis-rhsa-2022_0011.json").read_text())
    found, unmatched = fixes(parse_advisory(copy.deepcopy(data)))
    assert found == []
    assert len(unmatched) == 15  # the 15 fixed telnet builds, none a GPU component
    assert {u.reason for u in unmatched} == {"not a component gpuposture inventories"}


@pytest.mark.django_db
def test_the_import_says_when_a_bulletin_pairs_nothing(tmp_path):
    from django.core.management import call_command

    from inventory.models import Bulletin

    (tmp_path / "rhsa.json").write_text(json.dumps(rhsa()))
    out, err = io.StringIO(), io.StringIO()
    call_command("import_bulletins", str(tmp_path), stdout=out, stderr=err)
    assert "1 imported" in out.getvalue()
    assert "RHSA-2099:0001: no product paired" in err.getvalue()
    assert "distribution package nvidia-container-toolkit 1.17.8-1.el9" in err.getvalue()
    [stored] = Bulletin.objects.all()
    assert "backports" in stored.unmatched[0]["reason"]
