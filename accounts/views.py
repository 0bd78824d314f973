"""The API tokens page: your own tokens only; a new key is shown once, on the create answer."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from accounts.forms import TokenCreateForm
from accounts.services import token_create, token_revoke
from gpuposture.base.models import ApiToken
from gpuposture.base.roles import has_any_role


def _require_role(request: HttpRequest) -> None:
    if not has_any_role(request.user):
        raise PermissionDenied("API tokens need a gpuposture role; ask an administrator.")


@never_cache
def token_list(request: HttpRequest) -> HttpResponse:
    _require_role(request)
    form = TokenCreateForm(request.POST or None)
    created = key = None
    if request.method == "POST" and form.is_valid():
        try:
            created, key = token_create(user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            # Answered here rather than redirected: the key must not be kept anywhere
            # (a session or message store) to show it on a later page.
            form = TokenCreateForm()
    tokens = ApiToken.objects.filter(user=request.user)
    return render(
        request,
        "account/token_list.html",
        {"tokens": tokens, "form": form, "created": created, "key": key},
        status=400 if request.method == "POST" and created is None else 200,
    )


@require_POST
def token_revoke_view(request: HttpRequest, pk: int) -> HttpResponse:
    _require_role(request)
    # Another user's token is "not found": its existence is not yours to learn.
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    token_revoke(token=token, user=request.user)
    messages.success(request, f"Token {token} revoked; it no longer works.")
    return redirect("token-list")
