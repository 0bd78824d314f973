"""Production settings: check --deploy is clean, SECRET_KEY is required, secrets come from
NAME or NAME_FILE, and pages carry the security headers (CSP without inline scripts)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

from gpuposture.settings.env import env_bool, env_list, env_secret, env_str

BASE_DIR = Path(__file__).resolve().parents[2]


def run_python(code: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run Python in a fresh process with only `env` (plus PATH/HOME/LANG), from the repo root,
    so the real settings module reads exactly these variables."""
    base = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    if "DATABASE_URL_FILE" not in env:
        base["DATABASE_URL"] = f"sqlite:///{tmp_path / 'settings-test.sqlite3'}"
    base.update(env)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )


def production_env() -> dict[str, str]:
    return {
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "GPUPOSTURE_MFA_ENCRYPTION_KEY": secrets.token_urlsafe(32),
        "ALLOWED_HOSTS": "gpuposture.example",
    }


PRINT_SETTINGS = (
    "import os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'gpuposture.settings');"
    "from django.conf import settings as s; s.SECRET_KEY;"
    "print(repr(s.SECRET_KEY)); print(s.DATABASES['default']['NAME']);"
    "print(repr(s.GPUPOSTURE_METRICS_TOKEN)); print(s.CELERY_BROKER_URL)"
)


def test_check_deploy_is_clean_with_production_values(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=BASE_DIR,
        env={
            **{k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ},
            **production_env(),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'deploy.sqlite3'}",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
    assert "WARNINGS" not in result.stdout + result.stderr


def test_missing_secret_key_is_an_error_naming_both_variables(tmp_path):
    env = production_env()
    del env["SECRET_KEY"]
    result = run_python("import gpuposture.settings", env, tmp_path)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "SECRET_KEY is not set" in result.stderr
    assert "SECRET_KEY_FILE" in result.stderr


PRINT_MFA_KEY = (
    "import os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'gpuposture.settings');"
    "from django.conf import settings as s; print(repr(s.GPUPOSTURE_MFA_ENCRYPTION_KEY))"
)


def test_missing_mfa_encryption_key_stops_production_with_one_clear_line(tmp_path):
    env = production_env()
    del env["GPUPOSTURE_MFA_ENCRYPTION_KEY"]
    result = run_python(PRINT_MFA_KEY, env, tmp_path)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("django.core.exceptions.ImproperlyConfigured: ")
    assert "GPUPOSTURE_MFA_ENCRYPTION_KEY is not set" in last
    assert "GPUPOSTURE_MFA_ENCRYPTION_KEY_FILE" in last
    # Too short a key is refused too; a file works; DEBUG derives one from SECRET_KEY.
    short = {**env, "GPUPOSTURE_MFA_ENCRYPTION_KEY": "short"}
    assert "too short" in run_python(PRINT_MFA_KEY, short, tmp_path).stderr
    key = secrets.token_urlsafe(32)
    (tmp_path / "mfa_key").write_text(key + "\n")
    from_file = {**env, "GPUPOSTURE_MFA_ENCRYPTION_KEY_FILE": str(tmp_path / "mfa_key")}
    result = run_python(PRINT_MFA_KEY, from_file, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == repr(key)
    result = run_python(PRINT_MFA_KEY, {**env, "DEBUG": "1"}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert env["SECRET_KEY"] in result.stdout


def test_secrets_come_from_files_without_the_trailing_newline(tmp_path):
    key = secrets.token_urlsafe(50)
    (tmp_path / "key").write_text(key + "\n")
    db = tmp_path / "from-file.sqlite3"
    (tmp_path / "db").write_text(f"sqlite:///{db}\n")
    (tmp_path / "token").write_text(" metrics token with spaces \n")
    (tmp_path / "broker").write_text("redis://:p%40ss@127.0.0.1:6379/5\n")
    env = production_env()
    del env["SECRET_KEY"]
    env.update(
        SECRET_KEY_FILE=str(tmp_path / "key"),
        DATABASE_URL_FILE=str(tmp_path / "db"),
        GPUPOSTURE_METRICS_TOKEN_FILE=str(tmp_path / "token"),
        CELERY_BROKER_URL_FILE=str(tmp_path / "broker"),
    )
    result = run_python(PRINT_SETTINGS, env, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-4] == repr(key)
    assert lines[-3] == str(db)
    # A secret is kept exactly as written, except the one newline the file ends with.
    assert lines[-2] == repr(" metrics token with spaces ")
    assert lines[-1] == "redis://:p%40ss@127.0.0.1:6379/5"


def test_secret_and_secret_file_both_set_is_an_error(tmp_path):
    (tmp_path / "key").write_text("from-the-file")
    env = {**production_env(), "SECRET_KEY_FILE": str(tmp_path / "key")}
    result = run_python("import gpuposture.settings", env, tmp_path)
    assert result.returncode != 0
    assert "Both SECRET_KEY and SECRET_KEY_FILE are set" in result.stderr


def test_production_cookie_and_hsts_settings(tmp_path):
    code = (
        "import os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'gpuposture.settings');"
        "from django.conf import settings as s;"
        "print(s.SESSION_COOKIE_SECURE, s.SESSION_COOKIE_HTTPONLY, s.CSRF_COOKIE_SECURE,"
        " s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SECURE_HSTS_INCLUDE_SUBDOMAINS,"
        " s.DEBUG)"
    )
    result = run_python(code, production_env(), tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True", "True", "True", "31536000", "True", "False"]


# --- env helpers ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("s3cret\n", "s3cret"),
        ("s3cret\r\n", "s3cret"),
        ("s3cret", "s3cret"),
        ("s3cret\n\n", "s3cret\n"),  # only one newline goes
        ("  padded  \n", "  padded  "),
    ],
)
def test_env_secret_reads_the_file_exactly(tmp_path, monkeypatch, content, expected):
    path = tmp_path / "secret"
    path.write_text(content, newline="")
    monkeypatch.delenv("GPUPOSTURE_TEST_SECRET", raising=False)
    monkeypatch.setenv("GPUPOSTURE_TEST_SECRET_FILE", str(path))
    assert env_secret("GPUPOSTURE_TEST_SECRET") == expected


def test_env_secret_refuses_empty_or_unreadable_files(tmp_path, monkeypatch):
    (tmp_path / "empty").write_text("\n")
    monkeypatch.setenv("GPUPOSTURE_TEST_SECRET_FILE", str(tmp_path / "empty"))
    with pytest.raises(ImproperlyConfigured, match="is empty"):
        env_secret("GPUPOSTURE_TEST_SECRET")
    monkeypatch.setenv("GPUPOSTURE_TEST_SECRET_FILE", str(tmp_path / "missing"))
    with pytest.raises(ImproperlyConfigured, match="cannot be read"):
        env_secret("GPUPOSTURE_TEST_SECRET")


def test_env_secret_default_and_plain_variable(monkeypatch):
    monkeypatch.delenv("GPUPOSTURE_TEST_SECRET", raising=False)
    monkeypatch.delenv("GPUPOSTURE_TEST_SECRET_FILE", raising=False)
    assert env_secret("GPUPOSTURE_TEST_SECRET") is None
    assert env_secret("GPUPOSTURE_TEST_SECRET", "fallback") == "fallback"
    monkeypatch.setenv("GPUPOSTURE_TEST_SECRET", "plain")
    assert env_secret("GPUPOSTURE_TEST_SECRET") == "plain"


def test_every_variable_refuses_both_forms(tmp_path, monkeypatch):
    (tmp_path / "flag").write_text("1\n")
    monkeypatch.setenv("GPUPOSTURE_TEST_FLAG", "0")
    monkeypatch.setenv("GPUPOSTURE_TEST_FLAG_FILE", str(tmp_path / "flag"))
    with pytest.raises(ImproperlyConfigured, match="Both GPUPOSTURE_TEST_FLAG and"):
        env_bool("GPUPOSTURE_TEST_FLAG")
    monkeypatch.delenv("GPUPOSTURE_TEST_FLAG")
    assert env_bool("GPUPOSTURE_TEST_FLAG") is True
    assert env_str("GPUPOSTURE_TEST_FLAG") == "1"


# --- response headers -------------------------------------------------------------------------
def csp_directives(header: str) -> dict[str, list[str]]:
    directives = {}
    for part in header.split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


@pytest.mark.django_db
def test_pages_carry_the_security_headers(client, small_world, personas):
    client.force_login(personas["auditor"])
    response = client.get("/")
    assert response.status_code == 200
    csp = csp_directives(response["Content-Security-Policy"])
    assert csp["script-src"] == ["'self'"]  # no 'unsafe-inline', no 'unsafe-eval'
    assert csp["default-src"] == ["'self'"]
    assert csp["frame-ancestors"] == ["'none'"]
    assert csp["object-src"] == ["'none'"]
    assert csp["base-uri"] == ["'none'"]
    assert csp["form-action"] == ["'self'"]
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Content-Type-Options"] == "nosniff"


@pytest.mark.django_db
def test_hsts_over_https_only(client, personas, settings):
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    client.force_login(personas["auditor"])
    assert "Strict-Transport-Security" not in client.get("/")  # browsers ignore it over http
    response = client.get("/", secure=True)
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"


@pytest.mark.skipif(
    os.environ.get("DEBUG", "").lower() in ("1", "true", "yes", "on"),
    reason="cookies are Secure only with DEBUG off",
)
@pytest.mark.django_db
def test_session_and_csrf_cookies_are_secure(client, personas):
    assert django_settings.SESSION_COOKIE_SECURE and django_settings.CSRF_COOKIE_SECURE
    form = client.get("/accounts/login/", secure=True)
    csrf = form.cookies["csrftoken"]
    assert csrf["secure"] is True
    response = client.post(
        "/accounts/login/",
        {"login": "aud", "password": "not-used-in-tests-1"},
        secure=True,
    )
    assert response.status_code == 302
    session = response.cookies["sessionid"]
    assert session["secure"] is True
    assert session["httponly"] is True
    assert session["samesite"] == "Lax"


class _ScriptFinder(HTMLParser):
    """Collects inline scripts (executable <script> without src) and on* attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.inline: list[str] = []
        self._in_inline = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        self.inline += [f"<{tag} {name}=...>" for name, _ in attrs if name.startswith("on")]
        if tag == "script" and "src" not in named:
            # JSON data blocks (json_script) are not executed, so CSP does not govern them.
            self._in_inline = named.get("type") not in ("application/json",)

    def handle_data(self, data: str) -> None:
        if self._in_inline and data.strip():
            self.inline.append(data.strip()[:60])

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_inline = False


@pytest.mark.django_db
def test_no_page_needs_an_inline_script(client, small_world, personas):
    """The CSP forbids inline scripts: no page, the API docs included, may depend on one."""
    from inventory.models import Node
    from tenants.models import Tenant

    client.force_login(personas["auditor"])
    node = Node.objects.filter(cluster=small_world).first()
    paths = [
        "/",
        f"/tenants/{Tenant.objects.first().slug}/",
        "/findings/",
        f"/clusters/{small_world.name}/",
        f"/nodes/{small_world.name}/{node.name}/",
        "/patch/",
        "/mig/",
        "/utilisation/",
        "/api/docs/",
    ]
    for path in paths:
        assert inline_scripts(client, path) == [], path
    # The docs' start-up script is a same-origin file the CSP allows.
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200
    assert "SwaggerUIBundle" in script.content.decode()
    client.logout()
    assert inline_scripts(client, "/accounts/login/") == []


def inline_scripts(client, path: str) -> list[str]:
    response = client.get(path)
    assert response.status_code == 200, path
    finder = _ScriptFinder()
    finder.feed(response.content.decode())
    return finder.inline


def test_env_list_set_but_empty_is_the_empty_list(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUPOSTURE_TEST_LIST", raising=False)
    assert env_list("GPUPOSTURE_TEST_LIST", ["a"]) == ["a"]
    monkeypatch.setenv("GPUPOSTURE_TEST_LIST", "")
    assert env_list("GPUPOSTURE_TEST_LIST", ["a"]) == []
    monkeypatch.setenv("GPUPOSTURE_TEST_LIST", " b, c ,")
    assert env_list("GPUPOSTURE_TEST_LIST", ["a"]) == ["b", "c"]
    monkeypatch.delenv("GPUPOSTURE_TEST_LIST")
    (tmp_path / "list").write_text("\n")
    monkeypatch.setenv("GPUPOSTURE_TEST_LIST_FILE", str(tmp_path / "list"))
    assert env_list("GPUPOSTURE_TEST_LIST", ["a"]) == []
