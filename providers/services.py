"""Writes to the provider registry."""

from __future__ import annotations

from django.db import transaction

from audit.services import CREATE, Actor, audit_record, model_to_audit_dict
from providers.models import Provider


@transaction.atomic
def provider_ensure(*, slug: str, name: str, website: str = "", actor: Actor = None) -> Provider:
    """The provider with this slug, registered (an audit event by `actor`) if new; an existing
    one is left as it is."""
    provider, created = Provider.objects.get_or_create(
        slug=slug, defaults={"name": name, "website": website}
    )
    if created:
        audit_record(actor=actor, action=CREATE, obj=provider, after=model_to_audit_dict(provider))
    return provider
