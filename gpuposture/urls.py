"""URL wiring: pages, the API under /api/v1/, its schema and docs, login, health."""

from __future__ import annotations

from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from gpuposture.base.views import healthz, readyz
from gpuposture.metrics import metrics

# Errors under /api/ are JSON like every other API answer; pages keep their templates.
handler404 = "gpuposture.base.api.not_found"
handler500 = "gpuposture.base.api.server_error"

# The admin signs in through allauth's login, so its two-factor step and rate limits apply.
admin.site.login = secure_admin_login(admin.site.login)

# Each app lists its own pages. Inventory's come before posture's: `clusters/new/` must not
# be read as the posture page of a cluster named "new".
urlpatterns = [
    path("", include("inventory.urls")),
    path("", include("posture.urls")),
    path("", include("partitioner.urls")),
    path("", include("enforcement.urls")),
    path("", include("telemetry.urls")),
    path("", include("sharing.urls")),
    path("", include("providers.urls")),
    path("", include("audit.urls")),
    path("api/v1/", include(("gpuposture.api_urls", "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its start-up script as a file: no inline script for the CSP to allow.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="swagger-ui"),
    path("account/notifications/", include("notifications.urls")),
    path("account/", include("accounts.urls")),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("readyz", readyz, name="readyz"),
]
