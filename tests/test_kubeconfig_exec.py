"""Kubeconfig credential plugins (`exec`, gcp `cmd-path`) run only when
GPUPOSTURE_KUBECONFIG_EXEC_ALLOW lists them; a refusal names the command and the setting, and
nothing has run."""

from __future__ import annotations

import copy
import os
import shutil
import stat
from pathlib import Path

import pytest
import yaml

from inventory.models import SyncRun
from inventory.services import cluster_sync
from inventory.sources.base import SourceError
from inventory.sources.kube_exec import (
    CredentialCommand,
    command_allowed,
    credential_commands,
    refuse_unlisted_commands,
)
from inventory.sync import SyncError, cluster_get_or_create
from tests.conftest import load_json
from tests.kubeapi import TOKEN, FakeKubeAPI

EXEC_API = "client.authentication.k8s.io/v1beta1"


def plugin(directory: Path, marker: Path, name: str = "cred-plugin") -> Path:
    """A credential plugin that leaves `marker` behind when it runs and prints the token the
    fake API server accepts."""
    status = f'"status":{{"token":"{TOKEN}"}}'
    credential = f'{{"apiVersion":"{EXEC_API}","kind":"ExecCredential",{status}}}'
    script = directory / name
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\necho '{credential}'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def kubeconfig(tmp_path: Path, server: str, user: dict, *, extra_users: list | None = None) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "reader", "user": user}, *(extra_users or [])],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "reader"}}],
        "current-context": "c",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def exec_user(command: str) -> dict:
    return {"exec": {"apiVersion": EXEC_API, "command": command, "interactiveMode": "Never"}}


@pytest.fixture
def api():
    with FakeKubeAPI(copy.deepcopy(load_json("small-cluster.json")["items"])) as server:
        yield server


def sync(path: Path):
    cluster = cluster_get_or_create(name="exec")
    cluster.source, cluster.kubeconfig_path = "kubeconfig", str(path)
    cluster.save(update_fields=["source", "kubeconfig_path"])
    return cluster, cluster_sync(cluster=cluster)


def last_error() -> str:
    return SyncRun.objects.filter(cluster__name="exec").latest("pk").error


@pytest.mark.django_db
def test_an_unlisted_exec_plugin_is_refused_before_it_runs(api, tmp_path, settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 0
    marker = tmp_path / "plugin-ran"
    command = plugin(tmp_path, marker)
    path = kubeconfig(tmp_path, api.url, exec_user(str(command)))
    with pytest.raises(SyncError) as raised:
        sync(path)
    assert raised.value.retryable is False
    error = SyncRun.objects.get(cluster__name="exec").error
    assert str(command) in error and "GPUPOSTURE_KUBECONFIG_EXEC_ALLOW" in error
    assert not marker.exists()
    assert api.requests == []  # not even an anonymous call
    # Listed by its full path, it runs and its token reads the cluster.
    settings.GPUPOSTURE_KUBECONFIG_EXEC_ALLOW = [str(command)]
    _cluster, run = sync(path)
    assert run.status == "succeeded"
    assert marker.exists()


@pytest.mark.django_db
def test_a_legacy_gcp_cmd_path_and_another_users_plugin_are_refused(api, tmp_path):
    marker = tmp_path / "plugin-ran"
    command = plugin(tmp_path, marker)
    gcp = {"auth-provider": {"name": "gcp", "config": {"cmd-path": f"{command} config-helper"}}}
    with pytest.raises(SyncError):
        sync(kubeconfig(tmp_path, api.url, gcp))
    assert "auth-provider cmd-path" in last_error()
    # The current context's user has a plain token; another user of the file has a plugin:
    # a context is one edit away, so the file is refused as a whole.
    other = [{"name": "admin", "user": exec_user(str(command))}]
    with pytest.raises(SyncError):
        sync(kubeconfig(tmp_path, api.url, {"token": TOKEN}, extra_users=other))
    assert "'admin'" in last_error()
    assert not marker.exists()


@pytest.mark.django_db
def test_a_kubeconfig_without_plugins_needs_no_allow_list(api, tmp_path, settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 0
    _cluster, run = sync(kubeconfig(tmp_path, api.url, {"token": TOKEN}))
    assert run.status == "succeeded"


def test_a_bare_name_is_found_on_path_like_the_client_finds_it(tmp_path, monkeypatch):
    marker = tmp_path / "plugin-ran"
    bin_dir, elsewhere = tmp_path / "bin", tmp_path / "elsewhere"
    bin_dir.mkdir(), elsewhere.mkdir()
    on_path = plugin(bin_dir, marker, name="aws")
    impostor = plugin(elsewhere, marker, name="aws")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    which = shutil.which
    assert command_allowed("aws", ["aws"], which)
    assert command_allowed(str(on_path), ["aws"], which)
    assert not command_allowed(str(impostor), ["aws"], which)  # same name, another directory
    assert not command_allowed("aws", [str(on_path)], which)  # a full path allows that path only
    assert not marker.exists()


def no_path(name: str) -> str | None:
    return None


@pytest.mark.parametrize(
    ("command", "allow", "allowed"),
    [
        ("aws", ["aws"], True),
        ("aws", ["gke-gcloud-auth-plugin"], False),
        ("aws", [], False),
        ("/usr/local/bin/kubelogin", ["/usr/local/bin/kubelogin"], True),
        ("/usr/local/bin/../bin/kubelogin", ["/usr/local/bin/kubelogin"], True),
        ("/tmp/kubelogin", ["/usr/local/bin/kubelogin"], False),
        ("/tmp/kubelogin", ["kubelogin"], False),  # not where PATH finds kubelogin
        ("", ["aws"], False),
    ],
)
def test_allow_list_table(command, allow, allowed):
    assert command_allowed(command, allow, no_path) is allowed


def test_the_commands_of_every_user_are_found():
    users = [
        {"name": "a", "user": exec_user("aws")},
        {"name": "b", "user": {"auth-provider": {"config": {"cmd-path": "gcloud x"}}}},
        {"name": "c", "user": {"auth-provider": {"config": {"cmd-path": "/g c", "cmd-args": "x"}}}},
        {"name": "d", "user": {"exec": {"command": ["not", "a", "string"]}}},
        {"name": "e", "user": {"token": "t"}},
        "not a mapping",
    ]
    assert credential_commands(users) == [
        CredentialCommand("a", "exec", "aws"),
        CredentialCommand("b", "auth-provider cmd-path", "gcloud"),
        CredentialCommand("c", "auth-provider cmd-path", "/g c"),
        CredentialCommand("d", "exec", ""),
    ]
    refused = "'d' runs a credential plugin \\(exec\\) with no command"
    with pytest.raises(SourceError, match=refused):
        refuse_unlisted_commands(users, ["aws", "gcloud", "/g c"], no_path)
