"""The test harness every pytest run in this repository shares: our own suite under tests/ and
any suite dropped beside it (a peer's, written from the design, collected from the repository
root). Test personas sign in with `force_login`, over plain HTTP, with Celery eager; each test
starts with an empty cache and nothing waiting to be re-scored. Fixtures of our own suite
(personas, worlds) are in tests/conftest.py."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from django.core.cache import cache

from gpuposture.celery import app as celery_app

OWN_SUITE = Path(__file__).resolve().parent / "tests"


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


@pytest.fixture(autouse=True)
def _commit_as_production(request):
    """On-commit work (the re-score every change asks for, DESIGN §5 "re-scores ... at once")
    runs as it does in production, where a request or a command commits its transaction: when
    the outermost transaction of the code under test ends, or at once outside one.

    A test's own wrapping transaction (pytest-django's django_db) never commits, so without
    this a suite that syncs and reads the findings, as DESIGN says it may, would find none
    until it ran `score`; tests that capture the callbacks themselves
    (django_capture_on_commit_callbacks) still see them.

    Our own suite under tests/ commits by hand instead: its worlds pin states in between (a
    synced world not yet scored, the re-scores a change queues) and run the callbacks where
    they mean to (django_capture_on_commit_callbacks(execute=True)). A test of ours opts in
    with the `commit_as_production` marker; every suite collected beside tests/ has it."""
    own_suite = Path(str(request.node.path)).is_relative_to(OWN_SUITE)
    if own_suite and request.node.get_closest_marker("commit_as_production") is None:
        yield
        return
    from contextlib import contextmanager
    from unittest import mock

    from django.db import DEFAULT_DB_ALIAS, connections
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.transaction import Atomic
    from django.test import TestCase

    def only_the_tests(connection) -> bool:
        blocks = connection.atomic_blocks
        return bool(blocks) and all(getattr(b, "_from_testcase", False) for b in blocks)

    def run_now(connection) -> None:
        callbacks, connection.run_on_commit = connection.run_on_commit, []
        for _sids, func, robust in callbacks:
            if not robust:
                func()
                continue
            try:
                func()
            except Exception:  # a robust callback's error is logged, as Django does
                logging.getLogger("django.db.backends.base").exception(
                    "Error calling %s in on_commit()", getattr(func, "__qualname__", func)
                )

    original_on_commit = BaseDatabaseWrapper.on_commit
    original_exit = Atomic.__exit__

    def on_commit(self, func, robust=False):
        original_on_commit(self, func, robust)
        if only_the_tests(self) and not _capturing[0]:
            run_now(self)

    def exit_(self, exc_type, exc_value, traceback):
        result = original_exit(self, exc_type, exc_value, traceback)
        connection = connections[self.using or "default"]
        if only_the_tests(connection) and connection.run_on_commit and not _capturing[0]:
            run_now(connection)
        return result

    capture = TestCase.__dict__["captureOnCommitCallbacks"].__func__

    @contextmanager
    def capture_by_hand(cls, *, using=DEFAULT_DB_ALIAS, execute=False):
        # The test takes the callbacks itself (and runs them, with execute=True): none runs
        # before, and none is left behind to run at the next transaction's end.
        start = len(connections[using].run_on_commit)
        _capturing[0] = True
        try:
            with capture(cls, using=using, execute=execute) as callbacks:
                yield callbacks
        finally:
            _capturing[0] = False
            del connections[using].run_on_commit[start:]

    with (
        mock.patch.object(BaseDatabaseWrapper, "on_commit", on_commit),
        mock.patch.object(Atomic, "__exit__", exit_),
        mock.patch.object(TestCase, "captureOnCommitCallbacks", classmethod(capture_by_hand)),
    ):
        yield


# While a test captures on-commit callbacks itself, they are left to it.
_capturing = [False]
