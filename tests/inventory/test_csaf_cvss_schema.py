"""A CVSS score that breaks the schema CSAF embeds (baseScore a number from 0.0 to 10.0,
baseSeverity one of NONE..CRITICAL) refuses its document, naming where: read around, a string
"9.0" dropped a critical CVE to the next score's high (or to none), and 99 was kept as a CVSS.
The last good revision stays, and the refusal is in the import's record."""

from __future__ import annotations

import io
import json
import math
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from inventory.bulletins.csaf.document import CsafError, parse_advisory
from inventory.models import Bulletin, BulletinImport
from posture.models import Finding
from posture.services import posture_evaluate
from tests.inventory.test_csaf_shapes import document, judged, version
from tests.posture.test_bulletin_acceptance_outdated import driver_bulletin, imported

PRODUCTS = [version("A", "1.17.7"), version("F", "1.17.8")]
STATUS = {"known_affected": ["A"], "fixed": ["F"]}


def scored(**cvss: Any) -> dict:
    return document(PRODUCTS, STATUS, scores=[{"products": ["A"], "cvss_v3": cvss}])


@pytest.mark.parametrize(
    ("cvss", "said"),
    [
        ({"baseScore": "9.0", "baseSeverity": "CRITICAL"}, "cvss_v3.baseScore is '9.0'"),
        ({"baseScore": None, "baseSeverity": "CRITICAL"}, "cvss_v3.baseScore is None"),
        ({"baseSeverity": "CRITICAL"}, "cvss_v3.baseScore is None"),
        ({"baseScore": 99, "baseSeverity": "LOW"}, "cvss_v3.baseScore is 99,"),
        ({"baseScore": -5, "baseSeverity": "LOW"}, "cvss_v3.baseScore is -5,"),
        ({"baseScore": 10.1}, "cvss_v3.baseScore is 10.1,"),
        ({"baseScore": math.nan}, "cvss_v3.baseScore is nan,"),
        ({"baseScore": True}, "cvss_v3.baseScore is True,"),
        ({"baseScore": 9.8, "baseSeverity": "SEVERE"}, "cvss_v3.baseSeverity is 'SEVERE'"),
        ({"baseScore": 9.8, "baseSeverity": 4}, "cvss_v3.baseSeverity is 4,"),
    ],
)
def test_a_score_breaking_the_cvss_schema_refuses_the_document_naming_it(cvss, said):
    with pytest.raises(CsafError) as refused:
        parse_advisory(scored(**cvss))
    assert refused.value.reason.startswith(f"vulnerabilities[0].scores[0].{said}")
    assert "not a number from 0.0 to 10.0" in refused.value.reason or "not one of" in str(
        refused.value
    )


def test_csaf_2_1_metrics_and_malformed_entries_are_refused_too():
    data = document(PRODUCTS, STATUS, metrics=[{"content": {"cvss_v4": {"baseScore": "9.3"}}}])
    data["document"]["csaf_version"] = "2.1"
    with pytest.raises(CsafError, match=r"metrics\[0\]\.content\.cvss_v4\.baseScore is '9.3'"):
        parse_advisory(data)
    for entry, said in (("9.0", r"scores\[0\] is"), ({"cvss_v3": "9.0"}, "cvss_v3 is not")):
        with pytest.raises(CsafError, match=said):
            parse_advisory(document(PRODUCTS, STATUS, scores=[entry]))


@pytest.mark.parametrize(
    ("cvss", "rated"),
    [
        ({"baseScore": 0, "baseSeverity": "NONE"}, ("none", 0.0)),
        ({"baseScore": 10, "baseSeverity": "CRITICAL"}, ("critical", 10.0)),
        ({"baseScore": 9.1, "baseSeverity": "critical"}, ("critical", 9.1)),
        ({"baseScore": 7.5}, ("high", 7.5)),
    ],
)
def test_scores_within_the_schema_still_rate(cvss, rated):
    (exposure,) = judged(scored(**cvss), "1.17.7").exposures
    assert (exposure.severity, exposure.max_cvss) == rated


@pytest.mark.django_db
@pytest.mark.parametrize("base", ["9.1", None, 99, -5])
def test_a_revision_with_a_broken_score_keeps_the_critical_revision(small_world, tmp_path, base):
    """Revision 2 of a critical driver bulletin, the same but its baseScore a string (its
    baseSeverity CRITICAL still stated), null, or out of range: import_bulletins exits
    non-zero naming the score, revision 1 and gpu-ts-1's critical STACK-001 stay."""
    imported(driver_bulletin("OWN-C", {"R550": "550.144.03"}, "CVE-2099-3333", cvss=9.1))
    (finding,) = Finding.objects.filter(check_id="STACK-001", subject_name="gpu-ts-1")
    assert (finding.status, finding.severity) == ("open", "critical")
    second = driver_bulletin("OWN-C", {"R550": "550.144.03"}, "CVE-2099-3333", version="2")
    second["vulnerabilities"][0]["scores"][0]["cvss_v3"].update(
        baseScore=base, baseSeverity="LOW" if isinstance(base, int) else "CRITICAL"
    )
    path = tmp_path / "own-c-2.json"
    path.write_text(json.dumps(second))
    err = io.StringIO()
    with pytest.raises(CommandError, match=r"scores\[0\]\.cvss_v3\.baseScore is"):
        call_command("import_bulletins", str(path), stdout=io.StringIO(), stderr=err)
    assert f"refused {path}: vulnerabilities[0].scores[0].cvss_v3.baseScore" in err.getvalue()
    bulletin = Bulletin.objects.get(tracking_id="OWN-C")
    assert bulletin.version == "1"
    record = BulletinImport.objects.latest("id")
    assert record.refused[0]["source"] == str(path)
    assert "not a number from 0.0 to 10.0" in record.refused[0]["reason"]
    posture_evaluate()
    finding.refresh_from_db()
    assert (finding.status, finding.severity) == ("open", "critical")
