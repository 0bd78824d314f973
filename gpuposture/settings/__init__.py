"""Settings for gpuposture, all from the environment (DESIGN §11), one module per concern:

- core: paths, debug, secret key, apps, middleware, database, static files, cache, logging
- auth: passwords, django-allauth, sessions, two-factor, single sign-on
- security: cookies, HTTPS and HSTS, Content-Security-Policy
- api: Django REST framework and the OpenAPI schema
- app: gpuposture's own GPUPOSTURE_* settings (and email)
- celery: the broker and the beat schedule

Each setting is written once, in its module; this package is what DJANGO_SETTINGS_MODULE
names, and holds every UPPERCASE name of those modules. A module needing another's setting
imports it from there (security reads the SSO issuer from auth)."""

from __future__ import annotations

import importlib

_concerns = ("core", "auth", "security", "api", "app", "celery")

for _name in _concerns:
    _module = importlib.import_module(f"gpuposture.settings.{_name}")
    globals().update({key: value for key, value in vars(_module).items() if key.isupper()})
