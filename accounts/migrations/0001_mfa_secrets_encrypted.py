"""Encrypt the two-factor secrets stored in clear before MFA_ADAPTER sealed them
(gpuposture.base.mfa_secrets). Runs again harmlessly: sealed values are left alone. Reversible:
going back decrypts them, for the code before this change, which reads them in clear."""

from __future__ import annotations

from typing import Any

from django.db import migrations

from gpuposture.base.mfa_secrets import SECRET_FIELDS, sealed_data, settings_fernet, unsealed_data


def _rewrite(apps: Any, change: Any) -> None:
    authenticator = apps.get_model("mfa", "Authenticator")
    fernet = settings_fernet()
    for row in authenticator.objects.filter(type__in=list(SECRET_FIELDS)).iterator():
        data = change(fernet, row.type, row.data)
        if data != row.data:
            row.data = data
            row.save(update_fields=["data"])


def seal_secrets(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps, sealed_data)


def unseal_secrets(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps, unsealed_data)


class Migration(migrations.Migration):
    dependencies = [("mfa", "0003_authenticator_type_uniq")]

    operations = [migrations.RunPython(seal_secrets, unseal_secrets)]
