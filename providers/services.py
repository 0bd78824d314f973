"""Writes to the provider registry. A provider registered or changed from its page or from
the API is saved by `provider_save`: the same fields, the same contacts, one audit event."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction

from audit.services import CREATE, Actor, audit_record, model_to_audit_dict
from providers.models import Provider, ProviderContact

CONTACT_FIELDS = ("name", "email", "phone", "role")


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


@transaction.atomic
def provider_save(
    *,
    provider: Provider | None,
    values: Mapping[str, Any],
    contacts: Iterable[Mapping[str, Any]] | None,
    actor: Actor,
) -> Provider:
    """Register a provider (`provider` None) or change one: set `values` (its fields), replace
    its contacts by `contacts` when given (None leaves them as they are), and record one audit
    event by `actor`, "create" or "update" with the stored state before the change."""
    # Read back what is stored: a form has already written its values onto the instance.
    stored = Provider.objects.filter(pk=provider.pk).first() if provider and provider.pk else None
    before = model_to_audit_dict(stored) if stored is not None else None
    saved = provider if provider is not None else Provider()
    for name, value in values.items():
        setattr(saved, name, value)
    saved.save()
    if contacts is not None:
        if stored is not None:
            saved.contacts.all().delete()
        ProviderContact.objects.bulk_create(
            ProviderContact(provider=saved, **{f: c[f] for f in CONTACT_FIELDS if f in c})
            for c in contacts
        )
    audit_record(
        actor=actor,
        action="update" if before else CREATE,
        obj=saved,
        before=before,
        after=model_to_audit_dict(saved),
    )
    return saved
