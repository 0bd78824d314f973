"""Writes for the policy packs: record a generated pack when it differs from the last one."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction

from enforcement.models import GeneratedPack
from inventory.models import Cluster


@transaction.atomic
def generated_pack_record(
    *,
    cluster: Cluster,
    dialect: str,
    mode: str,
    content: str,
    sha256: str,
    user: AbstractBaseUser | AnonymousUser | None = None,
) -> tuple[GeneratedPack, GeneratedPack | None]:
    """(the stored pack now, the one before it) for the cluster, dialect and mode. A pack
    equal to the latest stored one is not stored again, so regenerating is harmless."""
    # Lock the cluster row: two generations at once must not both store the same pack.
    Cluster.objects.select_for_update().filter(pk=cluster.pk).first()
    history = GeneratedPack.objects.filter(cluster=cluster, dialect=dialect, mode=mode)
    latest = history.first()
    if latest is not None and latest.sha256 == sha256:
        return latest, history.exclude(pk=latest.pk).first()
    current = GeneratedPack.objects.create(
        cluster=cluster,
        dialect=dialect,
        mode=mode,
        content=content,
        sha256=sha256,
        generated_by=user if user is not None and user.is_authenticated else None,
    )
    return current, latest
