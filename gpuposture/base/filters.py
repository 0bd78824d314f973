"""Filters that name an object the way a person does (DESIGN §8): `?cluster=prod-east`,
`?tenant=alpha` or `?tenant=Team Alpha`, and still the id a script read from the API.

A value that names nothing is refused, never read as "none match": `?tenant=alpah` answers a
400 naming the parameter, the value and what is accepted, where an empty list would read as
"alpha has no findings". The check runs when the filter form is cleaned, so the API (400),
the pages (the error beside an empty list) and the CLI (a non-zero exit) say the same thing.
An object the user may not see is refused in exactly the words of one that does not exist:
no filter is an existence oracle (DESIGN §10). An empty value (`?tenant=`) is no filter."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Model, Q, QuerySet
from django_filters.rest_framework import DjangoFilterBackend

# Beyond this many accepted values the refusal points at the list instead of quoting it.
MAX_LISTED = 20


def named(path: str, value: str, names: tuple[str, ...], *, ids: bool = True) -> Q:
    """Matches the object at `path` ("" for the model itself) by any of its `names` fields,
    or by its id when the value is a number (and `ids`). A name that is all digits still
    matches by name: both are tried, and an id and a name rarely meet on one value."""
    prefix = f"{path}__" if path else ""
    value = value.strip()
    query = Q()
    for field in names:
        query |= Q(**{f"{prefix}{field}": value})
    if ids and value.isdigit():
        query |= Q(**{f"{prefix}pk": int(value)})
    return query


def refusal(
    noun: str,
    value: str,
    known: Sequence[str],
    *,
    scoped: bool,
    accepts: str,
    listing: str = "",
    max_listed: int = MAX_LISTED,
) -> ValidationError:
    """The error for a `value` that names no `noun`: what to give instead, the closest
    accepted values, and the accepted values themselves (or where they are listed). `known`
    must hold only what the asker may see: the message is built from nothing else."""
    where = " that you may see" if scoped else ""
    parts = [f"no {noun} {value!r}{where}; give {accepts}."]
    close = difflib.get_close_matches(value, known, n=3, cutoff=0.6)
    if close:
        parts.append(f"Did you mean {' or '.join(repr(c) for c in close)}?")
    if not known:
        parts.append("There are none.")
    elif len(known) <= max_listed or not listing:
        parts.append(f"Accepted: {', '.join(known)}.")
    else:
        parts.append(f"{listing} lists them.")
    # The value is the asker's: a "%" in it must not be read as a format (django-filter and
    # Django apply params to the message), so the text is escaped and given params.
    return ValidationError(
        " ".join(parts).replace("%", "%%"), code="unknown", params={"value": value}
    )


def resolve_named(
    objects: QuerySet,
    value: str,
    *,
    user: Any,
    noun: str,
    names: tuple[str, ...],
    ids: bool = True,
    listing: str = "",
    max_listed: int = MAX_LISTED,
) -> list[int]:
    """The ids of the objects `value` names (by any of `names`, or by id) among those `user`
    may see; `user` None (the CLI) sees them all. Names nothing: a ValidationError (refusal)."""
    visible = objects if user is None else objects.visible_to(user)
    found = list(visible.filter(named("", value, names, ids=ids)).values_list("pk", flat=True))
    if found:
        return sorted(set(found))  # a tenant viewer's scope joins through viewers: duplicates
    known = sorted(set(visible.values_list(names[0], flat=True)))
    article = "an" if noun[0] in "aeiou" else "a"
    accepts = f"{article} {noun}'s {_either(names, ids)}"
    raise refusal(
        noun,
        value,
        known,
        scoped=user is not None,
        accepts=accepts,
        listing=listing,
        max_listed=max_listed,
    )


def known_value(
    value: str,
    *,
    known: Iterable[str],
    noun: str,
    accepts: str,
    listing: str = "",
    scoped: bool = False,
) -> str:
    """`value` itself when it is one of `known`, else a ValidationError (refusal)."""
    known = list(known)
    if value in known:
        return value
    raise refusal(noun, value, known, scoped=scoped, accepts=accepts, listing=listing)


def _either(names: tuple[str, ...], ids: bool) -> str:
    words = [*names, "id"] if ids else list(names)
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


class CheckedField(forms.CharField):
    """A text value that `check` turns into what the filter applies (ids, a normalised
    value) or refuses with a ValidationError; an empty value is no filter (None)."""

    def __init__(self, *, check: Callable[[str], Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check

    def clean(self, value: Any) -> Any:
        text = super().clean(value)
        if not text or self.check is None:
            return None
        return self.check(text)


class _CheckedFilter(django_filters.CharFilter):
    """A filter whose value is checked against what its asker may see: the asker is the
    user of the FilterSet's request (None without one: the CLI, which sees everything)."""

    field_class = CheckedField

    def checker(self, user: Any) -> Callable[[str], Any]:
        raise NotImplementedError

    @property
    def field(self) -> forms.Field:
        parent = getattr(self, "parent", None)
        # Built once per FilterSet: a field copied from another one (base_filters are
        # deep-copied) would check for that one's user, so it is built again.
        if getattr(self, "_checked_for", None) is not parent or not hasattr(self, "_field"):
            self.__dict__.pop("_field", None)
            self._checked_for = parent
            request = getattr(parent, "request", None)
            self.extra["check"] = self.checker(getattr(request, "user", None))
        return super().field


class NamedFilter(_CheckedFilter):
    """A relation named by name, slug or id, e.g. `NamedFilter(path="cluster",
    model=Cluster, names=("name",), noun="cluster")`; its cleaned value is the ids it names,
    applied as `path__in` (or handed to `method`). `path` "" names the listed objects."""

    def __init__(
        self,
        *,
        path: str,
        model: type[Model],
        names: tuple[str, ...],
        noun: str,
        listing: str = "",
        ids: bool = True,
        max_listed: int = MAX_LISTED,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.path, self.model_class, self.names = path, model, names
        self.noun, self.listing, self.ids, self.max_listed = noun, listing, ids, max_listed

    def checker(self, user: Any) -> Callable[[str], list[int]]:
        objects = self.model_class._default_manager.all()
        return partial(
            resolve_named,
            objects,
            user=user,
            noun=self.noun,
            names=self.names,
            ids=self.ids,
            listing=self.listing,
            max_listed=self.max_listed,
        )

    def filter(self, qs: QuerySet, value: list[int] | None) -> QuerySet:
        if not value:
            return qs
        return qs.filter(**{f"{self.path}__in" if self.path else "pk__in": value})


class KnownValueFilter(_CheckedFilter):
    """A value from a set known at request time (check ids, a party), compared after
    `normalise`; `known(user)` gives the accepted values. Filters like a CharFilter."""

    def __init__(
        self,
        *,
        known: Callable[[Any], Iterable[str]],
        noun: str,
        accepts: str,
        listing: str = "",
        normalise: Callable[[str], str] = str.strip,
        scoped: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.known, self.noun, self.accepts, self.listing = known, noun, accepts, listing
        self.normalise, self.scoped = normalise, scoped

    def checker(self, user: Any) -> Callable[[str], str]:
        def check(value: str) -> str:
            return known_value(
                self.normalise(value),
                known=self.known(user),
                noun=self.noun,
                accepts=self.accepts,
                listing=self.listing,
                scoped=self.scoped and user is not None,
            )

        return check


class FilterSet(django_filters.FilterSet):
    """The project's FilterSet (the API's auto-built ones too: ApiFilterBackend): a value
    outside a closed set of choices is refused with the choices it may take, and a refused
    filter selects nothing on a page rather than being dropped (a typo never widens a list)."""

    def get_form_class(self) -> type[forms.Form]:
        form = super().get_form_class()
        for name, field in form.base_fields.items():
            # A model choice's choices are a query, and NamedFilter names objects instead.
            if isinstance(field, forms.ChoiceField) and not isinstance(
                field, forms.ModelChoiceField
            ):
                values = ", ".join(str(v) for v, _label in field.choices if v not in ("", None))
                field.error_messages["invalid_choice"] = (
                    f"%(value)r is not accepted for {name}; give one of: {values}."
                )
        return form

    @property
    def qs(self) -> QuerySet:
        if self.is_bound and not self.is_valid():
            return self.queryset.none()
        return super().qs


def form_errors_text(errors: dict[str, list[str]]) -> str:
    """A filter form's errors on one line each, for the CLI: `--tenant: no tenant ...`."""
    return "\n".join(f"--{name}: {' '.join(messages)}" for name, messages in errors.items())


class ApiFilterBackend(DjangoFilterBackend):
    """django-filter's backend, building the FilterSets of `filterset_fields` on ours."""

    filterset_base = FilterSet
