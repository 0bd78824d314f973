"""DESIGN §9 `viewers: ["ana"]  # gpuposture usernames who may see this tenant`: the file names
people, whose accounts may come later (SSO makes them at the first sign-in). The name is kept as
declared; the account gets the tenant the moment it is created, whoever creates it; applying the
same file again is "unchanged"; taking the name out of the file takes the tenant away. Names are
trimmed and matched exactly (case-sensitive, as signing in is)."""

from __future__ import annotations

import io

import pytest
import yaml
from allauth.socialaccount.models import SocialAccount, SocialLogin
from django.contrib.auth.models import User
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.management import call_command
from django.test import Client, RequestFactory

from accounts.sso import SsoAccountAdapter
from audit.models import AuditEvent
from gpuposture.base.roles import TENANT_VIEWER
from gpuposture.base.sso_claims import ASSIGNABLE_ROLES, parse_group_map
from tenants.models import Tenant, TenantViewerName
from tenants.services import tenants_apply
from tenants.spec import TenantSpecError, parse_tenants_document
from tests.conftest import api_client, load_json, make_user

pytestmark = pytest.mark.django_db

TENANTS = "/api/v1/tenants/"


def document(alpha_viewers: list[str]) -> dict:
    """The small world's tenants file, alpha's viewers replaced."""
    doc = load_json("small-tenants.json")
    assert isinstance(doc, dict)
    doc["tenants"][0]["viewers"] = alpha_viewers
    return doc


def apply(alpha_viewers: list[str]):
    return tenants_apply(specs=parse_tenants_document(document(alpha_viewers)))


def api_slugs(user) -> list[str]:
    return [row["slug"] for row in api_client(user).get(TENANTS).json()["results"]]


def page_status(user, slug: str) -> int:
    client = Client()
    client.force_login(user)
    return client.get(f"/tenants/{slug}/").status_code


def test_an_account_created_after_the_file_sees_its_tenant(small_world):
    result = apply(["viewer-alpha", "late-ana"])
    assert result.warnings == [
        "tenant 'alpha': viewer 'late-ana' has no account yet; the name is kept and the "
        "account gets the tenant when it is created"
    ]
    late = make_user("late-ana", TENANT_VIEWER)  # e.g. SSO at the first sign-in
    assert api_slugs(late) == ["alpha"]
    assert page_status(late, "alpha") == 200
    assert page_status(late, "beta") == 404
    # Applying the same file again changes nothing and records nothing.
    events = AuditEvent.objects.count()
    again = apply(["viewer-alpha", "late-ana"])
    assert (again.created, again.updated) == ([], [])
    assert sorted(again.unchanged) == ["alpha", "beta"] and again.warnings == []
    assert AuditEvent.objects.count() == events


def test_an_account_of_another_name_sees_nothing(small_world):
    apply(["viewer-alpha", "late-ana"])
    for username in ("late-anna", "Late-Ana", "late"):
        assert api_slugs(make_user(username, TENANT_VIEWER)) == []


def test_taking_the_name_out_of_the_file_takes_the_tenant_away(small_world):
    apply(["viewer-alpha", "late-ana"])
    late = make_user("late-ana", TENANT_VIEWER)
    assert api_slugs(late) == ["alpha"]
    result = apply(["viewer-alpha"])
    assert result.updated == ["alpha"]
    assert api_slugs(late) == []
    assert page_status(late, "alpha") == 404
    # Nor does a new account of that name get it.
    late.delete()
    assert api_slugs(make_user("late-ana", TENANT_VIEWER)) == []


def test_names_are_trimmed_kept_once_and_matched_exactly(small_world, personas):
    (spec, _beta) = parse_tenants_document(document([" late-ana ", "late-ana", "Viewer-Alpha"]))
    assert spec.viewers == ("late-ana", "Viewer-Alpha")
    result = tenants_apply(specs=[spec])
    # "Viewer-Alpha" is not the account "viewer-alpha": kept as declared, the near miss said.
    assert result.warnings[1] == (
        "tenant 'alpha': viewer 'Viewer-Alpha' has no account yet; the name is kept and the "
        "account gets the tenant when it is created (usernames are case-sensitive: "
        "'viewer-alpha' is not given it)"
    )
    assert api_slugs(personas["viewer_alpha"]) == []
    assert sorted(TenantViewerName.objects.values_list("username", flat=True)) == [
        "Viewer-Alpha",
        "late-ana",
        "viewer-beta",
    ]


@pytest.mark.parametrize("name", ["ana smith", "  ", "ana/ops", "a" * 151])
def test_a_name_that_can_never_be_a_username_is_refused(name):
    with pytest.raises(TenantSpecError, match="viewers"):
        parse_tenants_document(document([name]))


def test_the_api_keeps_a_pending_name_through_post_and_patch(small_world, personas):
    lead = api_client(personas["security_lead"])
    entry = {**document([])["tenants"][0], "viewers": ["viewer-alpha", "late-ana"]}
    assert lead.post(TENANTS, entry, format="json").status_code == 200
    alpha = Tenant.objects.get(slug="alpha")
    # A PATCH of another field keeps the declared names, with an account or not yet.
    answer = lead.patch(f"{TENANTS}{alpha.pk}/", {"name": "Alpha"}, format="json")
    assert answer.status_code == 200, answer.content
    names = alpha.viewer_names.values_list("username", flat=True)
    assert sorted(names) == ["late-ana", "viewer-alpha"]
    assert api_slugs(make_user("late-ana", TENANT_VIEWER)) == ["alpha"]


def test_apply_tenants_command_says_the_name_is_kept(small_world, tmp_path):
    path = tmp_path / "tenants.yaml"
    path.write_text(yaml.safe_dump(document(["late-ana"])))
    out, err = io.StringIO(), io.StringIO()
    call_command("apply_tenants", str(path), stdout=out, stderr=err)
    said = out.getvalue() + err.getvalue()
    assert "viewer 'late-ana' has no account yet; the name is kept" in said
    event = AuditEvent.objects.filter(object_type="tenants.tenant").latest("id")
    assert event.after["viewers"] == [] and event.after["viewers_without_account"] == ["late-ana"]


def test_accounts_made_by_createsuperuser_and_the_admin_get_the_tenant(small_world, admin_client):
    apply(["root-two", "admin-made"])
    call_command("createsuperuser", username="root-two", email="r@example.com", interactive=False)
    response = admin_client.post(
        "/admin/auth/user/add/",
        {
            "username": "admin-made",
            "password1": "a-long-unguessable-pass-42",
            "password2": "a-long-unguessable-pass-42",
            "usable_password": "true",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    alpha = Tenant.objects.get(slug="alpha")
    assert sorted(alpha.viewers.values_list("username", flat=True)) == ["admin-made", "root-two"]


def test_the_admin_shows_the_declared_names_without_an_account(small_world, admin_client):
    apply(["viewer-alpha", "late-ana"])
    alpha = Tenant.objects.get(slug="alpha")
    page = admin_client.get(f"/admin/tenants/tenant/{alpha.pk}/change/").content.decode()
    assert "late-ana, viewer-alpha" in page


def sso_settings(settings, *, roles: str, tenants: str) -> None:
    """The IdP's role and tenant maps (GPUPOSTURE_OIDC_*), groups in the `groups` claim."""
    settings.GPUPOSTURE_OIDC_ROLE_MAP = parse_group_map(roles, allowed=ASSIGNABLE_ROLES)
    settings.GPUPOSTURE_OIDC_TENANT_MAP = parse_group_map(tenants)
    settings.GPUPOSTURE_OIDC_GROUPS_CLAIM = "groups"


def sso_sign_up(username: str, uid: str, groups: list[str]):
    """The first SSO sign-in of `username` in `groups`: (the account it creates, the adapter,
    the request and the sign-in, to sign in again with)."""
    request = RequestFactory().get("/accounts/oidc/sso/login/callback/")
    SessionMiddleware(lambda r: None).process_request(request)
    request._messages = FallbackStorage(request)
    extra = {"id_token": {"sub": uid, "preferred_username": username, "groups": groups}}
    sociallogin = SocialLogin(
        user=User(username=username),
        account=SocialAccount(provider="sso", uid=uid, extra_data=extra),
    )
    adapter = SsoAccountAdapter(request)
    return adapter.save_user(request, sociallogin), adapter, request, sociallogin


def test_an_account_made_at_the_first_sso_sign_in_gets_the_tenant(small_world, settings):
    """With the IdP's tenant map too: it grants beta, the file's declaration grants alpha."""
    sso_settings(settings, roles="gpu-security=security_lead", tenants="team-beta=beta")
    apply(["viewer-alpha", "late-ana"])
    user, *_ = sso_sign_up("late-ana", "u-9", ["team-beta"])
    assert sorted(api_slugs(user)) == ["alpha", "beta"]


def test_viewer_usernames_lists_the_pending_names_and_reads_from_a_prefetch(
    small_world, django_assert_num_queries
):
    """What the tenants file would say again (a GET put back, a PATCH): declared names, an
    account or not, then an account given the tenant another way (here the admin's M2M)."""
    apply(["viewer-alpha", "late-ana"])
    Tenant.objects.get(slug="beta").viewers.add(make_user("given-by-admin"))
    with django_assert_num_queries(3):
        tenants = list(
            Tenant.objects.filter(is_system=False).prefetch_related("viewer_names", "viewers")
        )
        names = {t.slug: t.viewer_usernames() for t in tenants}
    assert names == {
        "alpha": ["late-ana", "viewer-alpha"],
        "beta": ["viewer-beta", "given-by-admin"],
    }


def test_an_account_without_a_role_named_in_the_file_sees_its_tenant(small_world):
    """DESIGN §9: `viewers` are usernames who may see the tenant (tenant_viewer role). An
    account with no role of its own (SSO makes them so) saw nothing: the tenant scope without
    the role shows no row."""
    existing = make_user("ops-ana")
    apply(["viewer-alpha", "ops-ana"])
    assert api_slugs(existing) == ["alpha"]
    assert page_status(existing, "alpha") == 200 and page_status(existing, "beta") == 404
    event = AuditEvent.objects.filter(object_type="auth.user").latest("id")
    assert (event.before, event.after) == ({"roles": []}, {"roles": [TENANT_VIEWER]})
    # The role is given once: the same file again changes nothing and records nothing.
    events = AuditEvent.objects.count()
    assert apply(["viewer-alpha", "ops-ana"]).updated == []
    assert AuditEvent.objects.count() == events


def test_an_account_created_later_without_a_role_gets_the_role_with_the_tenant(small_world):
    apply(["viewer-alpha", "late-ana"])
    late = make_user("late-ana")  # no role: the admin, createsuperuser or SSO made it
    assert list(late.groups.values_list("name", flat=True)) == [TENANT_VIEWER]
    assert api_slugs(late) == ["alpha"]
    # An account the file does not name gets nothing.
    assert list(make_user("late-bob").groups.all()) == []


def test_an_exact_sso_role_map_keeps_the_role_of_a_declared_viewer(small_world, settings):
    """The IdP maps the user's groups to procurement only and grants no tenant; the file
    declares the user a viewer of alpha. Sign-in after sign-in the user keeps seeing alpha."""
    sso_settings(settings, roles="gpu-buyers=procurement", tenants="team-beta=beta")
    apply(["viewer-alpha", "late-ana"])
    user, *_ = sso_sign_up("late-ana", "u-7", ["gpu-buyers"])
    assert sorted(user.groups.values_list("name", flat=True)) == ["procurement", TENANT_VIEWER]
    assert api_slugs(User.objects.get(pk=user.pk)) == ["alpha"]


def test_an_idp_tenant_map_does_not_revoke_a_tenant_the_file_declares(small_world, settings):
    """The tenant map manages alpha and the user's groups do not grant it; the file declares
    the user a viewer of alpha. The file wins (docs/access.md): before, each sign-in took alpha
    and the role away and each apply_tenants gave them back."""
    sso_settings(
        settings, roles="gpu-buyers=procurement", tenants="team-alpha=alpha;team-beta=beta"
    )
    apply(["viewer-alpha", "late-ana"])
    user, adapter, request, sociallogin = sso_sign_up("late-ana", "u-8", ["gpu-buyers"])
    adapter.pre_social_login(request, sociallogin)  # the next sign-in, same groups
    user = User.objects.get(pk=user.pk)
    assert sorted(user.groups.values_list("name", flat=True)) == ["procurement", TENANT_VIEWER]
    assert api_slugs(user) == ["alpha"]
