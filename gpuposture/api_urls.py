"""The REST API under /api/v1/ (DESIGN §8): each app's `api_urls` module lists its routes;
here they are put on one router, so /api/v1/ lists every collection in one root."""

from __future__ import annotations

from types import ModuleType

from rest_framework.routers import DefaultRouter

from audit import api_urls as audit_api
from enforcement import api_urls as enforcement_api
from inventory import api_urls as inventory_api
from partitioner import api_urls as partitioner_api
from posture import api_urls as posture_api
from providers import api_urls as providers_api
from sharing import api_urls as sharing_api
from telemetry import api_urls as telemetry_api
from tenants import api_urls as tenants_api

APPS: tuple[ModuleType, ...] = (
    tenants_api,
    inventory_api,
    partitioner_api,
    posture_api,
    telemetry_api,
    audit_api,
    sharing_api,
    providers_api,
    enforcement_api,
)

# No `.json` twins of every route: JSON is the only renderer, `?format=` names an export
# format, and the twins passed `format` to actions that take no such argument (a 500).
router = DefaultRouter()
router.include_format_suffixes = False
for app in APPS:
    router.registry.extend(app.router.registry)

# Each app's own paths first: `clusters/<name>/checklist/` and the like sit beside the
# `clusters` viewset's routes.
urlpatterns = [*(pattern for app in APPS for pattern in app.urlpatterns), *router.urls]
