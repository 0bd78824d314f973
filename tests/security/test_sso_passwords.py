"""Accounts created or linked by single sign-on have no local password: not at sign-up, not
after a link, not through "forgot password" or "change password", unless
GPUPOSTURE_SSO_LOCAL_PASSWORD allows it."""

from __future__ import annotations

import pytest
from allauth.account.forms import default_token_generator
from allauth.account.utils import user_pk_to_url_str
from allauth.socialaccount.models import SocialAccount, SocialLogin
from django.contrib.auth.models import User
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.middleware import SessionMiddleware
from django.core import mail
from django.test import Client, RequestFactory

from accounts.sso import SsoAccountAdapter
from gpuposture.base.sso_passwords import REFUSED_MESSAGE

pytestmark = pytest.mark.django_db

PASSWORD = "not-used-in-tests-1"  # tests.conftest.make_user's
NEW_PASSWORD = "a-brand-new-passphrase-7"


@pytest.fixture
def sso_settings(settings):
    settings.GPUPOSTURE_OIDC_ROLE_MAP = {}
    settings.GPUPOSTURE_OIDC_TENANT_MAP = {}
    app = {"provider_id": "sso", "name": "SSO", "client_id": "gpuposture", "secret": "x"}
    app["settings"] = {"server_url": "https://idp.example.org"}  # never called in these tests
    settings.SOCIALACCOUNT_PROVIDERS = {"openid_connect": {"APPS": [app]}}


def _request(user=None):
    request = RequestFactory().get("/accounts/oidc/sso/login/callback/")
    SessionMiddleware(lambda r: None).process_request(request)
    request._messages = FallbackStorage(request)
    if user is not None:
        request.user = user
    return request


def _sociallogin(user: User) -> SocialLogin:
    extra = {"id_token": {"sub": f"idp-{user.username}", "preferred_username": user.username}}
    account = SocialAccount(provider="sso", uid=f"idp-{user.username}", extra_data=extra)
    return SocialLogin(user=user, account=account)


def local_user(username: str) -> User:
    return User.objects.create_user(username, email=f"{username}@example.org", password=PASSWORD)


def sso_user(username: str) -> User:
    """An account as a first SSO sign-in creates it."""
    request = _request()
    user = SsoAccountAdapter(request).save_user(request, _sociallogin(User(username=username)))
    User.objects.filter(pk=user.pk).update(email=f"{username}@example.org")
    user.refresh_from_db()
    return user  # type: ignore[return-value]  # the adapter saves our User model


def sign_in(username: str, password: str = PASSWORD) -> tuple[Client, object]:
    client = Client()
    response = client.post("/accounts/login/", {"login": username, "password": password})
    return client, response


def reset_key_url(user: User) -> str:
    key = default_token_generator.make_token(user)
    return f"/accounts/password/reset/key/{user_pk_to_url_str(user)}-{key}/"


def test_an_sso_sign_up_has_no_usable_password(sso_settings):
    user = sso_user("bo")
    assert not user.has_usable_password()


def test_linking_an_idp_account_takes_the_local_password_away(sso_settings):
    user = local_user("ana")
    assert sign_in("ana")[1].status_code == 302  # before: the password works
    _sociallogin(user).connect(_request(user), user)  # allauth's link ("connect") step
    user.refresh_from_db()
    assert not user.has_usable_password()
    _client, response = sign_in("ana")
    assert response.status_code == 200  # the form again, no session


def test_an_sso_sign_in_takes_away_a_password_given_before(sso_settings):
    user = local_user("cy")
    SocialAccount.objects.create(user=user, provider="sso", uid="idp-cy")
    login = _sociallogin(user)
    login.account = SocialAccount.objects.get(user=user)
    SsoAccountAdapter(_request()).pre_social_login(_request(), login)
    user.refresh_from_db()
    assert not user.has_usable_password()


def test_a_password_given_to_an_sso_account_does_not_sign_in(sso_settings):
    # E.g. set by an admin, or kept from before the account was linked.
    user = local_user("di")
    SocialAccount.objects.create(user=user, provider="sso", uid="idp-di")
    client, response = sign_in("di")
    assert response.status_code == 200
    assert REFUSED_MESSAGE in response.content.decode()
    assert "_auth_user_id" not in client.session
    user.refresh_from_db()
    assert not user.has_usable_password()


def test_password_reset_sends_no_link_to_an_sso_account(sso_settings):
    user = sso_user("ed")
    client = Client()
    asked = client.post("/accounts/password/reset/", {"email": "ed@example.org"})
    unknown = client.post("/accounts/password/reset/", {"email": "nobody@example.org"})
    # The requester learns nothing new: the same answer as for an address with no account.
    assert asked.status_code == unknown.status_code == 302
    assert asked["Location"] == unknown["Location"]
    to_ed = [m for m in mail.outbox if m.to == ["ed@example.org"]]
    assert len(to_ed) == 1
    assert "single sign-on" in to_ed[0].body
    assert "/accounts/password/reset/key/" not in to_ed[0].body
    # A reset link obtained anyway (an old mail) sets nothing.
    page = client.get(reset_key_url(user), follow=True)
    assert page.status_code == 200
    response = client.post(
        page.redirect_chain[-1][0], {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    )
    assert REFUSED_MESSAGE in response.content.decode()
    user.refresh_from_db()
    assert not user.has_usable_password()


def test_an_sso_account_cannot_set_or_change_a_password(sso_settings):
    user = sso_user("fay")
    client = Client()
    client.force_login(user)
    new = {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    response = client.post("/accounts/password/set/", new)
    assert response.status_code == 200 and REFUSED_MESSAGE in response.content.decode()
    # One that still has a usable password (kept from before) cannot change it either.
    user.set_password(PASSWORD)
    user.save()
    client.force_login(user)
    response = client.post("/accounts/password/change/", {"oldpassword": PASSWORD, **new})
    assert response.status_code == 200 and REFUSED_MESSAGE in response.content.decode()
    user.refresh_from_db()
    assert user.check_password(PASSWORD) and not user.check_password(NEW_PASSWORD)


def test_local_users_keep_reset_and_change(sso_settings):
    user = local_user("gus")
    client = Client()
    client.post("/accounts/password/reset/", {"email": "gus@example.org"})
    assert "/accounts/password/reset/key/" in mail.outbox[-1].body
    client.force_login(user)
    new = {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    assert client.post("/accounts/password/change/", new).status_code == 302
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)


def test_an_admin_may_allow_local_passwords_for_sso_accounts(sso_settings, settings):
    settings.GPUPOSTURE_SSO_LOCAL_PASSWORD = True
    user = sso_user("hal")
    client = Client()
    client.post("/accounts/password/reset/", {"email": "hal@example.org"})
    assert "/accounts/password/reset/key/" in mail.outbox[-1].body
    client.force_login(user)
    new = {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    assert client.post("/accounts/password/set/", new).status_code == 302
    assert sign_in("hal", NEW_PASSWORD)[1].status_code == 302
