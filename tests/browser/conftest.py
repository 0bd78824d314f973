"""Browser tests: Debian's chromium driven by Playwright against a live server holding the demo
world. Run by `make test-browser` (and .ci/run); skipped by a plain `make test`."""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

CHROMIUM = os.environ.get("GPUPOSTURE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # The live server speaks plain HTTP; chromium would otherwise try https first.
    "--disable-features=HttpsUpgrades",
]
PASSWORD = "browser-walk-Passw0rd!"
SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
LOCAL_HOSTS = {"127.0.0.1", "localhost"}

# Playwright's sync API keeps an event loop in this thread; the test's own ORM calls (fixtures,
# assertions) are plain synchronous code, which Django refuses next to a loop unless told.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

if os.environ.get("GPUPOSTURE_BROWSER") != "1":
    pytest.skip(
        "browser tests run with `make test-browser` (Debian chromium + Playwright)",
        allow_module_level=True,
    )


@pytest.fixture(scope="session")
def chromium():
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


class Watched:
    """A page that records console errors, uncaught exceptions and any request that leaves
    this machine; `check()` fails the test on either."""

    def __init__(
        self, browser, base_url: str, folder: Path, width: int = 1280, height: int = 900
    ) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.page = self.context.new_page()
        self.base_url = base_url.replace("://localhost:", "://127.0.0.1:")
        self.folder = folder
        self.errors: list[str] = []
        self.foreign: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.errors.append(f"uncaught: {exc}"))
        self.page.on("request", self._request)

    def _console(self, message) -> None:
        if message.type == "error":
            self.errors.append(f"{self.page.url}: {message.text}")

    def _request(self, request) -> None:
        url = urlparse(request.url)
        if url.scheme in ("data", "blob", "about"):
            return
        if url.hostname not in LOCAL_HOSTS:
            self.foreign.append(request.url)

    def go(self, path: str) -> None:
        response = self.page.goto(self.base_url + path)
        assert response is not None and response.status == 200, (path, response and response.status)
        self.page.wait_for_load_state("networkidle")
        self.check()

    def shot(self, name: str) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def check(self) -> None:
        assert not self.errors, self.errors
        assert not self.foreign, f"requests that leave the machine: {self.foreign}"

    def login(self, username: str) -> None:
        """Password, then the current TOTP code when the account has a second factor."""
        from django.contrib.auth import get_user_model

        from gpuposture.base.mfa import totp_current_code

        self.go("/accounts/login/")
        self.page.fill("input[name=login]", username)
        self.page.fill("input[name=password]", PASSWORD)
        self.page.click("form button[type=submit]")
        self.page.wait_for_load_state("networkidle")
        if self.page.locator("input[name=code]").count():
            user = get_user_model().objects.get(username=username)
            code, _ = totp_current_code(user)
            self.page.fill("input[name=code]", code)
            self.page.click("form button[type=submit]")
            self.page.wait_for_load_state("networkidle")
        assert "/accounts/login" not in self.page.url, f"{username} could not sign in"
        self.check()

    def close(self) -> None:
        self.context.close()


def _seed_rows_after_flush() -> None:
    """A transactional test's flush empties the tables, including the rows the data migrations
    seed (the role groups, the default trust classes and their risk weights), so the second
    browser test of a run would find none. Run those migrations' own functions again, as migrate
    did."""
    from django.apps import apps
    from django.db import migrations

    from tenants.models import TrustClass

    if TrustClass.objects.exists():
        return
    for name in (
        "gpuposture.base.migrations.0001_role_groups",
        "tenants.migrations.0002_default_trust_classes",
        "tenants.migrations.0005_trust_class_risk_weight",
    ):
        module = importlib.import_module(name)
        for operation in module.Migration.operations:
            if isinstance(operation, migrations.RunPython):
                operation.code(apps, None)


@pytest.fixture
def demo_world(transactional_db, settings) -> Iterator[None]:
    """The demo world, with one known password for every demo account."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    _seed_rows_after_flush()
    call_command("demo", stdout=open(os.devnull, "w"))  # noqa: SIM115 - closed with the process
    for user in get_user_model().objects.all():
        user.set_password(PASSWORD)
        user.save()
    yield


@pytest.fixture
def screens(request) -> Path:
    """A folder per test for its screenshots: var/screenshots/<test name>/."""
    folder = SHOTS / request.node.name
    shutil.rmtree(folder, ignore_errors=True)
    return folder
