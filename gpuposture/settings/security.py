"""Transport and browser security: secure cookies, HTTPS and HSTS, Content-Security-Policy."""

from __future__ import annotations

from urllib.parse import urlsplit

from gpuposture.settings.auth import GPUPOSTURE_OIDC_ISSUER
from gpuposture.settings.core import DEBUG
from gpuposture.settings.env import env_bool, env_int

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
# Preloading reaches every subdomain and takes months to undo: the domain's owner opts in
# (SECURE_HSTS_PRELOAD=1), so check --deploy's reminder about it (W021) is silenced.
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SILENCED_SYSTEM_CHECKS = ["security.W021"]
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
# Content-Security-Policy (django-csp 4): scripts only from our own files, never inline.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        # Plotly draws charts with <style> elements and style attributes, and Swagger UI's page
        # has an inline <style>: inline styles are allowed, inline scripts never are.
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
        "base-uri": ["'none'"],
        "object-src": ["'none'"],
    },
}
if GPUPOSTURE_OIDC_ISSUER:
    # "Sign in with SSO" posts to us, and we redirect the browser to the identity provider:
    # browsers hold that redirect to form-action too.
    _issuer = urlsplit(GPUPOSTURE_OIDC_ISSUER)
    CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"].append(
        f"{_issuer.scheme}://{_issuer.netloc}"
    )
