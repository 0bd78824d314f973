"""The REST API (Django REST framework) and its OpenAPI schema (drf-spectacular)."""

from __future__ import annotations

from gpuposture.settings.core import DEBUG

# --- REST API ----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    # Tokens first: their class answers 401 with WWW-Authenticate to a request without
    # credentials (personal, scoped, hashed tokens from /account/tokens/).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "gpuposture.base.tokens.ScopedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["gpuposture.base.permissions.RoleReadPermission"],
    # JSON bodies within size and depth limits: a 100,000-level body is a 400, never a 500.
    "DEFAULT_PARSER_CLASSES": [
        "gpuposture.base.parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_FILTER_BACKENDS": ["gpuposture.base.filters.ApiFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "gpuposture.base.pagination.StandardPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "gpuposture.base.api.json_exception_handler",
    # `?format=` names an export format (csv, sarif), not a DRF renderer.
    "URL_FORMAT_OVERRIDE": None,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
}
# Django refuses a body over this before any parser reads it (its default, 2.5 MB, answered a
# 3 MB body with an HTML "Bad Request"): it is the API's own documented limit,
# gpuposture.base.parsers.MAX_BODY_BYTES (a CSAF advisory, 20 MiB), and a body over it gets the
# JSON 400 with the reason (gpuposture.base.api). Uploaded files do not count towards it.
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024
SPECTACULAR_SETTINGS = {
    "TITLE": "gpuposture API",
    "DESCRIPTION": "GPU tenant isolation posture: tenants, inventory, findings and scores.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Like every other endpoint: a gpuposture role is needed (DESIGN §10).
    "SERVE_PERMISSIONS": ["gpuposture.base.permissions.RoleReadPermission"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    # Several models have a `status` or `mode`: name each enum after what it is.
    "ENUM_NAME_OVERRIDES": {
        "SharingModeEnum": "tenants.policy.SHARING_MODES",
        "RunStatusEnum": "inventory.models.SyncRun.Status",
        "SharingRequestStatusEnum": "tenants.models.SharingRequest.Status",
        "FindingStatusEnum": "posture.models.Finding.Status",
    },
}
