"""The demo ranks (issue 18): the sensitive tenant with the worst exposure is first on the
overview, no two tenants tie, every score is above 0 and explains itself, and last week's run
gives each tenant a trend. Needs the database: the demo is built through the real paths (once:
it takes a while, so the checks share one test)."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from posture.overview import overview_rows
from posture.selectors import latest_scores, top_actions

pytestmark = pytest.mark.django_db


def test_the_demo_ranks_the_sensitive_tenant_first_and_no_two_tenants_tie():
    call_command("demo", stdout=io.StringIO())
    admin = User.objects.get(username="admin")
    rows = overview_rows(admin)
    first = rows[0]
    assert (first.tenant_slug, first.trust_class) == ("clinical", "sensitive")
    sensitive = [r for r in rows if r.trust_class == "sensitive"]
    assert first.risk == max(r.risk for r in sensitive)
    risks = [r.risk for r in rows]
    assert len(set(risks)) == len(risks), risks  # no two tenants tie
    assert risks == sorted(risks, reverse=True)
    # Spread over the range, none at a floor.
    scores = [r.score for r in rows]
    assert all(s > 0 for s in scores) and max(scores) - min(scores) > 50, scores
    # Last week's run (dated a week back) gives every tenant a trend arrow.
    assert all(r.trend in ("up", "down", "same") for r in rows)

    # Each score explains itself: contributions add up to the risk, shares to 100 %.
    for score in latest_scores():
        assert round(sum(c["points"] for c in score.contributions), 2) == score.risk
        shares = [c["share"] for c in score.contributions]
        assert not shares or abs(sum(shares) - 100) <= 0.05 * len(shares)

    # The overview opens on the ranked list, in that order, before "Fix these first".
    client = Client()
    client.force_login(admin)
    html = client.get("/").content.decode()
    start = html.index("Tenants by risk")
    positions = [html.index(f'href="/tenants/{r.tenant_slug}/"', start) for r in rows]
    assert positions == sorted(positions)
    assert start < html.index("Fix these first")

    # Fix these first lists actions by risk removed; the top one protects the sensitive tenant
    # (the upgrade of its pool), and the table shows them in that order.
    actions = top_actions(admin)
    assert "clinical" in actions[0].tenants.values_list("slug", flat=True)
    assert actions[0].title.startswith("Upgrade ") and "sensitive-h100" in actions[0].title
    removed = [a.risk_removed for a in actions]
    assert removed == sorted(removed, reverse=True)
    fix_first = html[html.index("Fix these first") :]
    places = [fix_first.index(f"?action={a.key}") for a in actions]
    assert places == sorted(places)
