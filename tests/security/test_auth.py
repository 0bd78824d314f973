"""Authentication hardening: two-factor sign-in required per role, single sign-on roles from
the IdP's groups, login rate limits, sessions that end, password rules."""

from __future__ import annotations

import io
import re
import runpy
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine
from allauth.mfa.totp.internal.auth import format_hotp_value, hotp_value, validate_totp_code
from allauth.socialaccount.models import SocialAccount, SocialLogin
from django.conf import settings as django_settings
from django.contrib.auth.models import Group, User
from django.contrib.auth.password_validation import validate_password
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.services import token_create
from accounts.sso import SsoAccountAdapter
from audit.models import AuditEvent
from demo.management.commands.demo import Command as DemoCommand
from gpuposture.base import roles
from gpuposture.base.auth import NoSignupAccountAdapter
from gpuposture.base.mfa import IDP_MFA_SESSION_KEY, demo_mfa_reset, mfa_required
from gpuposture.base.sso_claims import (
    ASSIGNABLE_ROLES,
    MappingError,
    claim_groups,
    idp_used_mfa,
    oidc_claims,
    parse_group_map,
    sso_grant,
)
from tenants.models import Tenant, TrustClass
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

PAGE = "/findings/"
API = "/api/v1/trust-classes/"
PASSWORD = "not-used-in-tests-1"  # tests.conftest.make_user's
SETTINGS_FILE = Path(django_settings.BASE_DIR) / "gpuposture" / "settings" / "__init__.py"


@pytest.fixture(autouse=True)
def _fresh_cache():
    # Rate-limit counters and used TOTP codes live in the (process-wide) cache.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def enforce_mfa(settings):
    settings.GPUPOSTURE_MFA_REQUIRED_ROLES = ["security_lead", "platform_engineer", "superuser"]


@pytest.fixture
def admin_user(db) -> User:
    return User.objects.create_superuser("root", password=PASSWORD)


def browser(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def session_api(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)  # a session, as the browser's API calls have
    return client


# --- two-factor sign-in required per role ---------------------------------------------------


@pytest.mark.parametrize("persona", ["security_lead", "platform_engineer", "superuser"])
def test_roles_that_need_two_factors_are_sent_to_set_it_up(
    enforce_mfa, personas, admin_user, persona
):
    user = admin_user if persona == "superuser" else personas[persona]
    client = browser(user)
    for url in (PAGE, "/", "/admin/", "/account/tokens/"):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"] == "/accounts/2fa/", url
    setup = client.get("/accounts/2fa/", follow=True)
    assert setup.status_code == 200
    assert b"requires two-factor authentication" in setup.content
    # The way in (TOTP and security keys) and the way out stay open.
    for url in ("/accounts/2fa/totp/activate/", "/accounts/2fa/webauthn/add/"):
        response = client.get(url, follow=True)  # via "confirm your password" when asked
        assert response.status_code == 200, url
        assert response.redirect_chain[-1:] != [("/accounts/2fa/", 302)], url
    assert client.get("/healthz").status_code == 200
    api = session_api(user).get(API)
    assert api.status_code == 403
    assert api.json()["detail"].startswith("Set up two-factor authentication first")
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get(PAGE).status_code == 302 and "/login/" in client.get(PAGE)["Location"]


@pytest.mark.parametrize("persona", ["auditor", "procurement", "viewer_alpha", "no_role"])
def test_other_roles_need_no_second_factor(enforce_mfa, personas, persona):
    user = personas[persona]
    assert not mfa_required(user)
    assert browser(user).get(PAGE).status_code in (200, 403)  # no role: 403, never 2FA setup
    assert browser(user).get("/accounts/2fa/").status_code == 200  # they may set it up
    assert session_api(user).get(API).status_code in (200, 403)
    if persona != "no_role":
        assert browser(user).get(PAGE).status_code == 200
        assert session_api(user).get(API).status_code == 200


def test_superusers_need_it_only_when_listed(settings, admin_user, personas):
    settings.GPUPOSTURE_MFA_REQUIRED_ROLES = ["security_lead"]
    assert not mfa_required(admin_user)
    assert mfa_required(personas["security_lead"])
    assert browser(admin_user).get(PAGE).status_code == 200
    settings.GPUPOSTURE_MFA_REQUIRED_ROLES = []
    assert not mfa_required(personas["security_lead"])
    assert browser(personas["security_lead"]).get(PAGE).status_code == 200


def test_with_an_authenticator_the_pages_open_and_sign_in_asks_for_the_code(enforce_mfa, personas):
    user = personas["security_lead"]
    secret = demo_mfa_reset(user)
    assert secret
    client = Client()
    response = client.post("/accounts/login/", {"login": "sec", "password": PASSWORD})
    # The password alone signs nobody in: allauth asks for the code.
    assert response.status_code == 302 and response["Location"] == "/accounts/2fa/authenticate/"
    assert client.get(PAGE).status_code == 302
    assert client.post("/accounts/2fa/authenticate/", {"code": "000000"}).status_code == 200
    assert client.get(PAGE).status_code == 302  # a wrong code does not sign in either
    code = format_hotp_value(hotp_value(secret, int(time.time()) // 30))  # what an app shows
    response = client.post("/accounts/2fa/authenticate/", {"code": code})
    assert response.status_code == 302 and response["Location"] == "/home/"  # the role's home
    # The session passed a second factor: the pages need not look up the authenticators.
    with CaptureQueriesContext(connection) as queries:
        assert client.get(PAGE).status_code == 200
    assert not any("mfa_authenticator" in q["sql"] for q in queries.captured_queries)
    assert client.get(API).status_code == 200


def test_the_admin_login_goes_through_allauths(enforce_mfa):
    response = Client().get("/admin/login/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


def test_api_tokens_are_not_held_up(enforce_mfa, personas):
    user = personas["security_lead"]
    _token, key = token_create(user=user, name="ci", scope="read")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.get(API).status_code == 200
    # Even beside a session still waiting for its second factor, the token decides...
    both = session_api(user)
    both.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert both.get(API).status_code == 200
    # ...and a bad token is refused, not replaced by the session.
    both.credentials(HTTP_AUTHORIZATION="Bearer gpp_00000000_nope")
    assert both.get(API).status_code == 401


def test_an_idp_that_reports_two_factors_counts(enforce_mfa, personas):
    client = browser(personas["platform_engineer"])
    assert client.get(PAGE).status_code == 302
    session = client.session
    session[IDP_MFA_SESSION_KEY] = True
    session.save()
    assert client.get(PAGE).status_code == 200


@pytest.mark.parametrize(
    ("amr", "marked"),
    [(["pwd", "mfa"], True), (["hwk"], True), (["pwd"], False), (None, False)],
)
def test_sign_in_records_whether_the_idp_used_two_factors(personas, amr, marked):
    request = _request()
    request.session[IDP_MFA_SESSION_KEY] = True  # from an earlier sign-in: never kept
    id_token = {"sub": "1"} | ({"amr": amr} if amr is not None else {})
    sociallogin = SocialLogin(
        user=personas["platform_engineer"],
        account=SocialAccount(provider="sso", uid="1", extra_data={"id_token": id_token}),
    )
    request.user = personas["platform_engineer"]
    NoSignupAccountAdapter(request).post_login(
        request,
        personas["platform_engineer"],
        email_verification="none",
        signal_kwargs={"sociallogin": sociallogin},
        email=None,
        signup=False,
        redirect_url=None,
    )
    assert bool(request.session.get(IDP_MFA_SESSION_KEY)) is marked


def test_a_password_sign_in_never_carries_the_idp_mark(personas):
    request = _request()
    request.session[IDP_MFA_SESSION_KEY] = True
    request.user = personas["security_lead"]
    NoSignupAccountAdapter(request).post_login(
        request,
        personas["security_lead"],
        email_verification="none",
        signal_kwargs=None,
        email=None,
        signup=False,
        redirect_url=None,
    )
    assert IDP_MFA_SESSION_KEY not in request.session


def test_demo_accounts_that_need_two_factors_get_a_secret_and_a_code(enforce_mfa, settings):
    logins = DemoCommand()._users(["ana"])
    secrets = {username: secret for username, _password, _role, secret in logins}
    assert all(secrets[u] for u in ("admin", "security-lead", "platform-engineer"))
    assert not any(secrets[u] for u in ("auditor", "procurement", "ana"))
    settings.DEBUG = True
    out = io.StringIO()
    call_command("totp_code", "security-lead", stdout=out, stderr=io.StringIO())
    assert validate_totp_code(secrets["security-lead"], out.getvalue().strip())
    with pytest.raises(CommandError, match="no TOTP"):
        call_command("totp_code", "auditor", stderr=io.StringIO())
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG=1"):
        call_command("totp_code", "security-lead")


def test_the_demo_prints_how_to_sign_in_with_two_factors(enforce_mfa):
    command = DemoCommand(stdout=io.StringIO())
    command._print_logins(command._users([]))
    printed = command.stdout._out.getvalue()
    assert "make totp USER=<login>" in printed
    secret_lines = re.findall(r"^  (\S+) +secret [A-Z2-7]{32}$", printed, re.M)
    assert secret_lines == ["admin", "security-lead", "platform-engineer", "platform-engineer-2"]


# --- single sign-on: the IdP's groups decide the roles ------------------------------------------

ROLE_MAP = parse_group_map(
    "gpu-security=security_lead,gpu-platform=platform_engineer,audit=auditor,"
    "procurement=procurement",
    allowed=ASSIGNABLE_ROLES,
)
TENANT_MAP = parse_group_map("team-alpha=alpha,team-beta=beta")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, {}),
        ("", {}),
        ("a=security_lead", {"a": {"security_lead"}}),
        (" a = auditor , b=procurement ,", {"a": {"auditor"}, "b": {"procurement"}}),
        ("a=auditor,a=procurement", {"a": {"auditor", "procurement"}}),
        (
            "cn=gpu-sec,ou=groups,dc=example=security_lead;cn=audit,dc=example=auditor",
            {
                "cn=gpu-sec,ou=groups,dc=example": {"security_lead"},
                "cn=audit,dc=example": {"auditor"},
            },
        ),
    ],
)
def test_role_maps_are_read_from_the_environment_format(text, expected):
    assert parse_group_map(text, allowed=ASSIGNABLE_ROLES) == expected


@pytest.mark.parametrize("text", ["gpu-security", "=auditor", "a=", "a=superuser", "a=admin"])
def test_bad_role_maps_are_refused(text):
    with pytest.raises(MappingError):
        parse_group_map(text, allowed=ASSIGNABLE_ROLES)


def test_the_assignable_roles_are_the_roles():
    assert set(roles.ROLES) == ASSIGNABLE_ROLES


@pytest.mark.parametrize(
    ("claims", "groups"),
    [
        ({"groups": ["a", "b"]}, {"a", "b"}),
        ({"groups": "a"}, {"a"}),
        ({"groups": ["a", 3, None, {"x": 1}]}, {"a"}),
        ({"groups": 3}, set()),
        ({}, set()),
    ],
)
def test_groups_come_from_the_claim(claims, groups):
    assert claim_groups(claims, "groups") == groups


@pytest.mark.parametrize(
    ("groups", "role_map", "roles_", "exact", "tenants"),
    [
        (["gpu-security"], ROLE_MAP, {"security_lead"}, True, set()),
        (["gpu-security", "audit", "unknown"], ROLE_MAP, {"security_lead", "auditor"}, True, set()),
        (["unknown"], ROLE_MAP, set(), True, set()),  # roles managed: none left
        (["team-alpha"], ROLE_MAP, {"tenant_viewer"}, True, {"alpha"}),
        (
            ["team-alpha", "team-beta", "audit"],
            ROLE_MAP,
            {"tenant_viewer", "auditor"},
            True,
            {"alpha", "beta"},
        ),
        (["gpu-security"], {}, set(), False, set()),  # no role map: roles stay as set by admins
        (["team-beta"], {}, {"tenant_viewer"}, False, {"beta"}),
    ],
)
def test_sso_grant_table(groups, role_map, roles_, exact, tenants):
    grant = sso_grant(
        {"groups": groups}, groups_claim="groups", role_map=role_map, tenant_map=TENANT_MAP
    )
    assert grant.roles == roles_
    assert grant.roles_exact is exact
    assert grant.tenants == tenants
    assert grant.managed_tenants == {"alpha", "beta"}


def test_groups_claim_name_is_configurable():
    grant = sso_grant(
        {"groups": ["audit"], "roles": ["gpu-platform"]},
        groups_claim="roles",
        role_map=ROLE_MAP,
        tenant_map={},
    )
    assert grant.roles == {"platform_engineer"}


@pytest.mark.parametrize(
    ("claims", "used"),
    [
        ({"amr": ["pwd", "mfa"]}, True),
        ({"amr": ["otp"]}, True),
        ({"amr": ["hwk", "pin"]}, True),
        ({"amr": "MFA"}, True),
        ({"amr": ["pwd"]}, False),
        ({"amr": ["pwd", "kba"]}, False),
        ({"amr": 1}, False),
        ({}, False),
    ],
)
def test_idp_mfa_from_amr(claims, used):
    assert idp_used_mfa(claims) is used


def test_oidc_claims_prefer_userinfo_and_read_amr_from_the_id_token():
    claims, id_token = oidc_claims(
        {
            "id_token": {"sub": "1", "groups": ["old"], "amr": ["mfa"]},
            "userinfo": {"sub": "1", "groups": ["new"], "amr": ["pwd"]},
        }
    )
    assert claims["groups"] == ["new"]
    assert id_token["amr"] == ["mfa"]
    assert oidc_claims({"sub": "1", "groups": ["flat"]})[0]["groups"] == ["flat"]
    assert oidc_claims(None) == ({}, {})


@pytest.fixture
def sso_settings(settings):
    settings.GPUPOSTURE_OIDC_ROLE_MAP = ROLE_MAP
    settings.GPUPOSTURE_OIDC_TENANT_MAP = TENANT_MAP
    settings.GPUPOSTURE_OIDC_GROUPS_CLAIM = "groups"


@pytest.fixture
def tenants(db) -> dict[str, Tenant]:
    internal = TrustClass.objects.get(slug="internal")
    return {
        slug: Tenant.objects.create(slug=slug, name=slug.title(), trust_class=internal)
        for slug in ("alpha", "beta", "gamma")
    }


def _sociallogin(user: User, groups: list[str], provider: str = "sso") -> SocialLogin:
    extra = {"id_token": {"sub": "u-1", "preferred_username": user.username, "groups": groups}}
    return SocialLogin(
        user=user, account=SocialAccount(provider=provider, uid="u-1", extra_data=extra)
    )


def _request():
    request = RequestFactory().get("/accounts/oidc/sso/login/callback/")
    SessionMiddleware(lambda r: None).process_request(request)
    request._messages = FallbackStorage(request)
    return request


def test_an_sso_sign_in_sets_roles_and_tenants_from_the_groups(sso_settings, tenants):
    user = make_user("ana", roles.PROCUREMENT)  # given by an admin; the IdP now decides
    tenants["beta"].viewers.add(user)  # beta is managed by the tenant map: removed
    tenants["gamma"].viewers.add(user)  # gamma is not: kept
    SocialAccount.objects.create(user=user, provider="sso", uid="u-1")
    sociallogin = _sociallogin(user, ["gpu-security", "team-alpha", "someone-elses-group"])
    adapter = SsoAccountAdapter(_request())
    adapter.pre_social_login(_request(), sociallogin)
    assert set(user.groups.values_list("name", flat=True)) == {"security_lead", "tenant_viewer"}
    assert set(user.viewable_tenants.values_list("slug", flat=True)) == {"alpha", "gamma"}
    event = AuditEvent.objects.get(object_type="auth.user", object_id=str(user.pk))
    assert event.actor_name == "single sign-on"
    assert event.before == {"roles": ["procurement"], "tenants": ["beta", "gamma"]}
    assert event.after == {
        "roles": ["security_lead", "tenant_viewer"],
        "tenants": ["alpha", "gamma"],
    }
    # The next sign-in with the same groups changes nothing and records nothing.
    adapter.pre_social_login(_request(), _sociallogin(user, ["gpu-security", "team-alpha"]))
    assert AuditEvent.objects.filter(object_type="auth.user").count() == 1
    # Leaving every mapped group leaves no role.
    adapter.pre_social_login(_request(), _sociallogin(user, []))
    assert not user.groups.exists()
    assert set(user.viewable_tenants.values_list("slug", flat=True)) == {"gamma"}


def test_a_first_sso_sign_in_creates_the_account_with_its_roles(sso_settings, tenants):
    request = _request()
    new = User(username="bo")
    adapter = SsoAccountAdapter(request)
    sociallogin = _sociallogin(new, ["gpu-platform", "team-beta"])
    assert adapter.is_open_for_signup(request, sociallogin)
    user = adapter.save_user(request, sociallogin)
    user.refresh_from_db()
    assert not user.has_usable_password()  # SSO users never sign in with a password
    assert not user.is_staff and not user.is_superuser
    assert set(user.groups.values_list("name", flat=True)) == {"platform_engineer", "tenant_viewer"}
    assert list(user.viewable_tenants.values_list("slug", flat=True)) == ["beta"]
    assert SocialAccount.objects.get(user=user).uid == "u-1"


def test_only_sso_may_create_accounts(sso_settings):
    request = _request()
    other = _sociallogin(User(username="eve"), ["gpu-security"], provider="someone-else")
    assert not SsoAccountAdapter(request).is_open_for_signup(request, other)
    assert not NoSignupAccountAdapter(request).is_open_for_signup(request)
    response = Client().post(
        "/accounts/signup/",
        {"username": "eve", "password1": "a-long-passphrase-1", "password2": "a-long-passphrase-1"},
    )
    assert response.status_code == 200
    assert not User.objects.filter(username="eve").exists()


def _settings_with(monkeypatch, **env: str) -> dict:
    for name in [n for n in __import__("os").environ if n.startswith("GPUPOSTURE_OIDC_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # The settings package reads its modules (gpuposture/settings/*.py): run them afresh too.
    for name in [n for n in sys.modules if n.startswith("gpuposture.settings.")]:
        monkeypatch.delitem(sys.modules, name)
    return runpy.run_path(str(SETTINGS_FILE))


def test_sso_is_off_without_an_issuer(monkeypatch):
    values = _settings_with(monkeypatch)
    assert "APPS" not in values["SOCIALACCOUNT_PROVIDERS"]["openid_connect"]
    assert values["CONTENT_SECURITY_POLICY"]["DIRECTIVES"]["form-action"] == ["'self'"]


def test_sso_is_configured_from_the_environment(monkeypatch, tmp_path):
    secret_file = tmp_path / "oidc-secret"
    secret_file.write_text("s3cret-from-a-file\n")
    values = _settings_with(
        monkeypatch,
        GPUPOSTURE_OIDC_ISSUER="https://idp.example/realms/corp",
        GPUPOSTURE_OIDC_CLIENT_ID="gpuposture",
        GPUPOSTURE_OIDC_CLIENT_SECRET_FILE=str(secret_file),
        GPUPOSTURE_OIDC_NAME="Corp SSO",
        GPUPOSTURE_OIDC_GROUPS_CLAIM="roles",
        GPUPOSTURE_OIDC_ROLE_MAP="gpu-security=security_lead,audit=auditor",
        GPUPOSTURE_OIDC_TENANT_MAP="team-alpha=alpha",
    )
    (app,) = values["SOCIALACCOUNT_PROVIDERS"]["openid_connect"]["APPS"]
    assert app["provider_id"] == "sso"
    assert app["name"] == "Corp SSO"
    assert app["client_id"] == "gpuposture"
    assert app["secret"] == "s3cret-from-a-file"
    assert app["settings"]["server_url"] == "https://idp.example/realms/corp"
    assert values["GPUPOSTURE_OIDC_GROUPS_CLAIM"] == "roles"
    assert values["GPUPOSTURE_OIDC_ROLE_MAP"] == {
        "gpu-security": {"security_lead"},
        "audit": {"auditor"},
    }
    assert values["GPUPOSTURE_OIDC_TENANT_MAP"] == {"team-alpha": {"alpha"}}
    # The browser is redirected to the identity provider after posting "Sign in with SSO".
    form_action = values["CONTENT_SECURITY_POLICY"]["DIRECTIVES"]["form-action"]
    assert form_action == ["'self'", "https://idp.example"]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"GPUPOSTURE_OIDC_ISSUER": "https://idp.example"}, "GPUPOSTURE_OIDC_CLIENT_ID"),
        ({"GPUPOSTURE_OIDC_ROLE_MAP": "admins=superuser"}, "GPUPOSTURE_OIDC_ROLE_MAP"),
        ({"GPUPOSTURE_OIDC_TENANT_MAP": "team-alpha"}, "GPUPOSTURE_OIDC_TENANT_MAP"),
    ],
)
def test_bad_sso_settings_stop_the_start(monkeypatch, env, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        _settings_with(monkeypatch, **env)


def test_the_login_page_shows_the_sso_button_only_when_configured(settings):
    assert b"/accounts/oidc/" not in Client().get("/accounts/login/").content
    settings.SOCIALACCOUNT_PROVIDERS = {
        "openid_connect": {
            "APPS": [
                {
                    "provider_id": "sso",
                    "name": "Corp SSO",
                    "client_id": "gpuposture",
                    "secret": "s",
                    "settings": {"server_url": "https://idp.example"},
                }
            ]
        }
    }
    page = Client().get("/accounts/login/").content
    assert b"/accounts/oidc/sso/login/" in page and b"Corp SSO" in page


# --- login rate limits ----------------------------------------------------------------------


def test_failed_logins_are_rate_limited_per_account(personas):
    client = Client()
    for _attempt in range(5):
        response = client.post("/accounts/login/", {"login": "aud", "password": "wrong-guess-1"})
        assert response.status_code == 200 and b"Too many" not in response.content
    # The sixth try is refused even with the right password.
    response = client.post("/accounts/login/", {"login": "aud", "password": PASSWORD})
    assert b"Too many failed login attempts" in response.content
    assert client.get(PAGE).status_code == 302
    # Another account is not locked by it.
    response = Client().post("/accounts/login/", {"login": "proc", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/home/"  # the role's home


# --- sessions that end ------------------------------------------------------------------------

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_a_session_ends_after_30_idle_minutes(personas):
    with time_machine.travel(START, tick=False) as clock:
        client = browser(personas["auditor"])
        assert client.get(PAGE).status_code == 200
        clock.shift(timedelta(minutes=29))
        assert client.get(PAGE).status_code == 200  # activity moves the idle limit on
        clock.shift(timedelta(minutes=29))
        assert client.get(PAGE).status_code == 200
        clock.shift(timedelta(minutes=31))
        response = client.get(PAGE)
        assert response.status_code == 302 and "/login/" in response["Location"]
        assert "_auth_user_id" not in client.session  # signed out, not just redirected


def test_a_busy_session_still_ends_after_8_hours(personas):
    with time_machine.travel(START, tick=False) as clock:
        client = browser(personas["auditor"])
        for _step in range(23):  # a request every 20 minutes: 7 h 40
            assert client.get(PAGE).status_code == 200
            clock.shift(timedelta(minutes=20))
        assert client.get(PAGE).status_code == 200  # 7 h 40
        clock.shift(timedelta(minutes=21))
        response = client.get(PAGE)  # 8 h 01
        assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_idle_limit_is_a_setting(settings, personas):
    settings.GPUPOSTURE_SESSION_IDLE_MINUTES = 5
    with time_machine.travel(START, tick=False) as clock:
        client = browser(personas["auditor"])
        assert client.get(PAGE).status_code == 200
        clock.shift(timedelta(minutes=6))
        assert client.get(PAGE).status_code == 302


# --- password rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("password", "complaint"),
    [
        ("Tr0ub4dor&3", "too short"),
        ("qwerty123456", "too common"),
        ("839201746502938", "entirely numeric"),
        ("security-lead-x", "too similar"),
    ],
)
def test_weak_passwords_are_refused(password, complaint):
    user = User(username="security-lead-x")
    with pytest.raises(ValidationError) as error:
        validate_password(password, user)
    assert any(complaint in message for message in error.value.messages), error.value.messages


def test_a_good_passphrase_is_accepted():
    validate_password("correct horse battery staple", User(username="ana"))


def test_password_change_applies_the_rules(personas):
    client = browser(personas["auditor"])
    response = client.post(
        "/accounts/password/change/",
        {"oldpassword": PASSWORD, "password1": "short-1", "password2": "short-1"},
    )
    assert response.status_code == 200
    assert b"too short" in response.content
    assert User.objects.get(username="aud").check_password(PASSWORD)


def test_role_groups_exist_for_sso(db):
    assert set(Group.objects.filter(name__in=roles.ROLES).values_list("name", flat=True)) == set(
        roles.ROLES
    )
