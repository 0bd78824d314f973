"""Signing in: passwords, django-allauth, sessions, two-factor authentication, single sign-on."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from gpuposture.base.sso_claims import ASSIGNABLE_ROLES, MappingError, parse_group_map
from gpuposture.settings.core import DEBUG, SECRET_KEY
from gpuposture.settings.env import env_bool, env_int, env_list, env_secret, env_str
from gpuposture.settings.keys import mfa_encryption_key

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": env_int("GPUPOSTURE_PASSWORD_MIN_LENGTH", 12)},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]

# --- authentication (django-allauth) -----------------------------------------------------------
LOGIN_URL = "account_login"
# Each role lands on its own home (posture.homes): the first page of its day.
LOGIN_REDIRECT_URL = "home"
ACCOUNT_LOGOUT_REDIRECT_URL = "account_login"
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_ADAPTER = "gpuposture.base.auth.NoSignupAccountAdapter"
# Failed logins (and wrong two-factor codes): 10 a minute per address, 5 per 5 minutes per
# account. Counted in the cache: set CACHE_URL (Redis) when several processes serve requests.
ACCOUNT_RATE_LIMITS = {"login_failed": "10/m/ip,5/5m/key"}
ACCOUNT_SESSION_REMEMBER = False  # no "remember me": the session ends with the browser
# A session ends SESSION_COOKIE_AGE after sign-in (8 h), or after GPUPOSTURE_SESSION_IDLE_MINUTES
# without a request (30; 0 turns the idle limit off): gpuposture.base.sessions.
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 8 * 3600)
SESSION_EXPIRE_AT_BROWSER_CLOSE = True
GPUPOSTURE_SESSION_IDLE_MINUTES = env_int("GPUPOSTURE_SESSION_IDLE_MINUTES", 30)

# Two-factor authentication: TOTP apps and security keys (WebAuthn), with recovery codes.
# Users holding these roles ("superuser" for superusers) must set one up before anything else
# (gpuposture.base.mfa); everyone else may.
GPUPOSTURE_MFA_REQUIRED_ROLES = env_list(
    "GPUPOSTURE_MFA_REQUIRED_ROLES", ["security_lead", "platform_engineer", "superuser"]
)
MFA_SUPPORTED_TYPES = ["totp", "webauthn", "recovery_codes"]
MFA_TOTP_ISSUER = "gpuposture"
MFA_TOTP_TOLERANCE = 1  # accept the previous and next 30 s code too (clock drift, slow typing)
# WebAuthn needs https, except on http://localhost in development.
MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN = DEBUG


# Two-factor secrets are encrypted in the database with this key (gpuposture.base.mfa_secrets).
GPUPOSTURE_MFA_ENCRYPTION_KEY = mfa_encryption_key(debug=DEBUG, secret_key=SECRET_KEY)
MFA_ADAPTER = "gpuposture.base.mfa_secrets.EncryptingMfaAdapter"

# Single sign-on (OpenID Connect); no issuer, no SSO button. Redirect URI to register at the IdP:
# https://<host>/accounts/oidc/sso/login/callback/
GPUPOSTURE_OIDC_ISSUER = env_str("GPUPOSTURE_OIDC_ISSUER")
GPUPOSTURE_OIDC_PROVIDER_ID = "sso"
GPUPOSTURE_OIDC_GROUPS_CLAIM = env_str("GPUPOSTURE_OIDC_GROUPS_CLAIM", "groups")


def _oidc_map(name: str, allowed: frozenset[str] | None) -> dict[str, frozenset[str]]:
    try:
        return parse_group_map(env_str(name), allowed=allowed)
    except MappingError as exc:
        raise ImproperlyConfigured(f"{name}: {exc}") from exc


# "idp-group=role,...": an SSO user's roles are exactly what their groups map to.
GPUPOSTURE_OIDC_ROLE_MAP = _oidc_map("GPUPOSTURE_OIDC_ROLE_MAP", ASSIGNABLE_ROLES)
# "idp-group=tenant-slug,...": the user views those tenants (tenant_viewer).
GPUPOSTURE_OIDC_TENANT_MAP = _oidc_map("GPUPOSTURE_OIDC_TENANT_MAP", None)
SOCIALACCOUNT_ADAPTER = "accounts.sso.SsoAccountAdapter"
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False  # an IdP email never signs in a local account
# Accounts created or linked by SSO have no local password, and cannot get one through
# "forgot password" or "change password", unless this allows it (gpuposture.base.sso_passwords).
GPUPOSTURE_SSO_LOCAL_PASSWORD = env_bool("GPUPOSTURE_SSO_LOCAL_PASSWORD", False)
ACCOUNT_FORMS = {
    name: f"gpuposture.base.sso_passwords.{form}"
    for name, form in (
        ("change_password", "ChangePasswordForm"),
        ("set_password", "SetPasswordForm"),
        ("reset_password_from_key", "ResetPasswordKeyForm"),
    )
}
SOCIALACCOUNT_PROVIDERS: dict[str, dict] = {"openid_connect": {"OAUTH_PKCE_ENABLED": True}}
if GPUPOSTURE_OIDC_ISSUER:
    _client_id = env_str("GPUPOSTURE_OIDC_CLIENT_ID")
    _client_secret = env_secret("GPUPOSTURE_OIDC_CLIENT_SECRET")
    if not _client_id or not _client_secret:
        raise ImproperlyConfigured(
            "GPUPOSTURE_OIDC_ISSUER is set: set GPUPOSTURE_OIDC_CLIENT_ID and "
            "GPUPOSTURE_OIDC_CLIENT_SECRET (or GPUPOSTURE_OIDC_CLIENT_SECRET_FILE) too."
        )
    SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"] = [
        {
            "provider_id": GPUPOSTURE_OIDC_PROVIDER_ID,
            "name": env_str("GPUPOSTURE_OIDC_NAME", "Single sign-on"),
            "client_id": _client_id,
            "secret": _client_secret,
            "settings": {
                "server_url": GPUPOSTURE_OIDC_ISSUER,
                "scope": env_list("GPUPOSTURE_OIDC_SCOPES", ["openid", "profile", "email"]),
            },
        }
    ]
