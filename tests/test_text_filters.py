"""Template filters that add markup to text: check texts quote names as `this` (shown as
<code>), long names may wrap at their separators; everything else is escaped."""

from __future__ import annotations

from django.test import Client

from gpuposture.base.templatetags.gpuposture import breakable, inline_code


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
