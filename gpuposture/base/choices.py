"""A model field's TextChoices made from one of the shared enums (gpuposture.base.enums)."""

from __future__ import annotations

from collections.abc import Callable

from django.db import models

from gpuposture.base.enums import Codes


def text_choices(
    codes: type[Codes], *, label: Callable[[str], str] = str
) -> type[models.TextChoices]:
    """TextChoices with the enum's names and values; each label is label(value) (the value
    itself by default), so the choices a migration records stay what they were."""
    members = [(member.name, (member.value, label(member.value))) for member in codes]
    # django-stubs type TextChoices' class syntax only, not the functional Enum API.
    return models.TextChoices(codes.__name__, members)  # type: ignore[call-overload]
