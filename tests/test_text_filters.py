"""Template filters that add markup to text: check texts quote names as `this` (shown as
<code>), long names may wrap at their separators; everything else is escaped."""

from __future__ import annotations

import pytest
from django.test import Client

from gpuposture.base.templatetags.gpuposture import breakable, inline_code, points


def test_quoted_names_become_code_and_markup_stays_text():
    html = inline_code("set `nvidia.com/mig.config` and <b>not</b> `a<script>`")
    assert html == (
        "set <code>nvidia.com/mig.config</code> and &lt;b&gt;not&lt;/b&gt; "
        "<code>a&lt;script&gt;</code>"
    )
    assert inline_code("no quotes, a lone ` tick") == "no quotes, a lone ` tick"


def test_the_check_page_shows_code(personas):
    client = Client()
    client.force_login(personas["security_lead"])
    page = client.get("/checks/SHARE-001/").content.decode()
    assert "<code>nvidia.com/device-plugin.config</code>" in page
    assert "`nvidia.com/device-plugin.config`" not in page


def test_long_names_may_wrap_at_their_separators_only():
    assert breakable("gpuposture.io/trust-class=<x>") == (
        "gpuposture.io/<wbr>trust-class=<wbr>&lt;x&gt;"
    )


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (4e-08, "< 0.001"),  # a huge risk's score: a bound, never "4e-08" nor "0"
        (0.043, "0.043"),
        (2.8, "2.8"),
        (100.0, "100"),
        (293.85, "293.85"),
        (54096.05, "54,096.05"),
        (56.10000000000003, "56.1"),  # a share in percent, float noise and all
        (0, "0"),
        (None, ""),
    ],
)
def test_scores_and_points_read_as_plain_numbers(value, shown):
    assert points(value) == shown
