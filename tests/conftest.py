"""Shared fixtures: personas (STYLE rule 11) and a small synced world."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from gpuposture.base import roles

DATA = Path(__file__).parent / "data"


def make_user(username: str, *role_names: str) -> User:
    user = User.objects.create_user(username=username, password="not-used-in-tests-1")
    for name in role_names:
        user.groups.add(Group.objects.get(name=name))
    return user


@pytest.fixture
def personas(db) -> dict[str, User]:
    """One user per role, a user with no role, and two tenant viewers."""
    return {
        "security_lead": make_user("sec", roles.SECURITY_LEAD),
        "platform_engineer": make_user("plat", roles.PLATFORM_ENGINEER),
        "procurement": make_user("proc", roles.PROCUREMENT),
        "auditor": make_user("aud", roles.AUDITOR),
        "no_role": make_user("nobody"),
        "viewer_alpha": make_user("viewer-alpha", roles.TENANT_VIEWER),
        "viewer_beta": make_user("viewer-beta", roles.TENANT_VIEWER),
    }


def api_client(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def content(response) -> bytes:
    """A response's body, whether streamed (the findings export) or not."""
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return response.content


def world_snapshot_path() -> Path:
    return DATA / "small-cluster.json"


def load_json(name: str) -> object:
    return json.loads((DATA / name).read_text())


@pytest.fixture
def small_world(personas):
    """Tenants alpha (internal) and beta (external) time-sliced together on one GPU node,
    synced from tests/data/small-cluster.json and scored."""
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from posture.services import posture_evaluate
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    specs = parse_tenants_document(load_json("small-tenants.json"))
    tenants_apply(specs=specs)
    cluster = cluster_get_or_create(name="lab")
    cluster_sync_from_snapshot(cluster=cluster, paths=[world_snapshot_path()])
    posture_evaluate()
    return cluster


@pytest.fixture
def live_cluster(tmp_path, personas):
    """A cluster registered with a kubeconfig that reaches a fake API server serving the
    small world; yields (cluster, api)."""
    from inventory.models import Cluster
    from tests.kubeapi import FakeKubeAPI

    with FakeKubeAPI(copy.deepcopy(load_json("small-cluster.json")["items"])) as api:
        cluster = Cluster.objects.create(
            name="live",
            source="kubeconfig",
            kubeconfig_path=str(api.kubeconfig(tmp_path)),
            kube_context="fake",
        )
        yield cluster, api
