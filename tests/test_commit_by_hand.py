"""Our own suite commits by hand (the root conftest.py): unmarked, a synced world waits for
the score its tests run, so a test can pin the state in between."""

from __future__ import annotations

import pytest

from posture.models import PostureRun
from tests.test_commit_as_production import _sync

pytestmark = pytest.mark.django_db


def test_a_synced_world_waits_for_its_score(tmp_path):
    _sync(tmp_path)
    assert not PostureRun.objects.exists()
