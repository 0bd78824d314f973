"""Credentials for the fuzz and load benches: a user with a role, an API token, a session cookie.

Run inside the app's environment (DATABASE_URL, SECRET_KEY set by the caller):

    .venv/bin/python bench/bench_auth.py user NAME ROLE [--viewer-of SLUG ...]
    .venv/bin/python bench/bench_auth.py token NAME [--scope read|write]   # prints the header
    .venv/bin/python bench/bench_auth.py session NAME                      # prints the cookie

`api_token()` is the one place that knows which kind of token the app takes: the personal
scoped tokens' service when it exists, else its model directly, else DRF's authtoken.
"""

from __future__ import annotations

import argparse
import importlib
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def django_setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuposture.settings")
    import django

    django.setup()


def user_ensure(username: str, role: str, viewer_of: list[str] | None = None) -> Any:
    """A user with exactly this role (a Django group; "superuser" for an admin)."""
    from django.contrib.auth.models import Group, User

    user, _ = User.objects.get_or_create(username=username)
    user.set_unusable_password()
    user.is_staff = user.is_superuser = role == "superuser"
    user.save()
    user.groups.set(Group.objects.filter(name=role))
    if viewer_of:
        from tenants.models import Tenant

        for tenant in Tenant.objects.filter(slug__in=viewer_of):
            tenant.viewers.add(user)
    return user


def api_token(user: Any, *, scope: str = "write", days: int = 1) -> str:
    """A new token for `user`, as the value of its `Authorization` header."""
    name = f"bench-{secrets.token_hex(4)}"  # token names are unique per user
    for module_name in ("gpuposture.base.tokens", "accounts.services"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        create = getattr(module, "token_create", None)
        if create is not None:
            _token, key = create(user=user, name=name, scope=scope, days=days)
            return f"Bearer {key}"
    try:
        from gpuposture.base.models import ApiToken
        from gpuposture.base.tokens import hash_key, new_key
    except ImportError:
        from rest_framework.authtoken.models import Token

        return f"Token {Token.objects.get_or_create(user=user)[0].key}"
    from datetime import timedelta

    from django.utils import timezone

    prefix, key = new_key()
    ApiToken.objects.create(
        user=user,
        name=name,
        prefix=prefix,
        key_hash=hash_key(key),
        scope=scope,
        expires_at=timezone.now() + timedelta(days=days),
    )
    return f"Bearer {key}"


def session_cookie(user: Any) -> str:
    """`sessionid=...` for a logged-in session of `user`, as the login form would make."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    _second_factor(user)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    _record_sign_in(session, user)
    session.create()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


def _record_sign_in(session: Any, user: Any) -> None:
    """What a sign-in with a password and a TOTP code leaves in the session: the app's clocks
    (gpuposture.base.sessions; without them the first page writes the session) and allauth's
    record of both factors."""
    from gpuposture.base.sessions import SEEN_KEY, STARTED_KEY

    now = time.time()
    session[STARTED_KEY] = session[SEEN_KEY] = now
    try:
        from allauth.account.internal.flows import login
    except ImportError:
        return
    session[login.AUTHENTICATION_METHODS_SESSION_KEY] = [
        {"method": "password", "at": now, "username": user.get_username()},
        {"method": "mfa", "at": now, "type": "totp"},
    ]
    session[login._AUTHENTICATION_METHODS_USER_SESSION_KEY] = str(user.pk)


def _second_factor(user: Any) -> None:
    """A TOTP authenticator, as a security lead who signed in with two factors has (the app
    sends a session without one to the two-factor setup page)."""
    try:
        from allauth.mfa.models import Authenticator
        from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret
    except ImportError:
        return
    if not Authenticator.objects.filter(user_id=user.pk, type=Authenticator.Type.TOTP).exists():
        TOTP.activate(user, generate_totp_secret())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    user = sub.add_parser("user")
    user.add_argument("name")
    user.add_argument("role")
    user.add_argument("--viewer-of", nargs="*", default=[])
    token = sub.add_parser("token")
    token.add_argument("name")
    token.add_argument("--scope", default="write", choices=("read", "write"))
    session = sub.add_parser("session")
    session.add_argument("name")
    args = parser.parse_args()
    django_setup()
    from django.contrib.auth.models import User

    if args.command == "user":
        user_ensure(args.name, args.role, args.viewer_of)
        print(args.name)
    elif args.command == "token":
        print(api_token(User.objects.get(username=args.name), scope=args.scope))
    else:
        print(session_cookie(User.objects.get(username=args.name)))


if __name__ == "__main__":
    main()
