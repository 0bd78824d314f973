"""The test harness every pytest run in this repository shares: our own suite under tests/ and
any suite dropped beside it (a peer's, written from the design, collected from the repository
root). Test personas sign in with `force_login`, over plain HTTP, with Celery eager; each test
starts with an empty cache and nothing waiting to be re-scored. Fixtures of our own suite
(personas, worlds) are in tests/conftest.py."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from gpuposture.celery import app as celery_app


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # Personas are made in every test; real PBKDF2 would cost ~0.3 s per user.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # The test client speaks plain HTTP; production redirects to HTTPS.
    settings.SECURE_SSL_REDIRECT = False


@pytest.fixture(autouse=True)
def _no_mfa_enforcement(settings):
    # Personas sign in with force_login, without a second factor. Two-factor enforcement has
    # its own tests in tests/security/test_auth.py, which turn it back on.
    settings.GPUPOSTURE_MFA_REQUIRED_ROLES = []


@pytest.fixture(autouse=True)
def _empty_cache():
    # Cached pages are keyed by row ids, which a rolled-back test hands to the next one.
    cache.clear()


@pytest.fixture(autouse=True)
def _no_rescore_waiting():
    # A test's transaction never commits: what it asked to re-score would join the next
    # test's first commit (gpuposture.base.rescore). Start each test with nothing waiting.
    from gpuposture.base import rescore

    rescore._waiting.scope = None


@pytest.fixture(autouse=True)
def _celery_eager():
    # override_settings does not reach a configured Celery app: set it on the app's conf.
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
