"""One precision for risk points everywhere (the tenant page's, two decimals), and the score's
formula line says the score is rounded down, as posture.scoring.shown_score does on purpose
(red-team rtpages item 6)."""

from __future__ import annotations

import pytest
from django.test import Client

from posture.models import Action
from posture.scoring import shown_score

pytestmark = pytest.mark.django_db


def page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    return client.get(url).content.decode()


def test_fix_first_shows_risk_points_to_two_decimals(small_world, personas):
    action = Action.objects.order_by("-risk_removed").first()
    assert action is not None, "the small world has an action to fix first"
    Action.objects.filter(pk=action.pk).update(risk_removed=132.88)
    html = page(personas["security_lead"], "/")
    table = html.split('id="fix-first"')[1].split("</table>")[0]
    assert '<td class="num">132.88</td>' in table


def test_score_is_rounded_down_and_the_pages_say_so(small_world, personas):
    assert shown_score(2.86) == 2.8 and shown_score(57.9) == 57.0
    assert "rounded down" in page(personas["security_lead"], "/")
    assert "rounded down" in page(personas["security_lead"], "/tenants/alpha/")
