"""The fake API server speaks the list and watch protocols as the official client expects.

Every test drives the real `kubernetes` client, so a fake that drifts from the protocol
(item shape, continue tokens, error statuses) fails here, not in the sync tests.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import urllib3
from kubernetes.client import ApiClient, CoreV1Api
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from tests.kubeapi import TOKEN, FakeKubeAPI, kube_api  # noqa: F401 - kube_api is a fixture

PODS = "/api/v1/pods"
NODES = "/api/v1/nodes"
DATA = Path(__file__).parent / "data"


def pod(namespace: str, name: str) -> dict[str, Any]:
    # The v37 client validates with pydantic: a Pod needs containers with name and image.
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "main", "image": "nvcr.io/nvidia/cuda:12.4.1"}]},
    }


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


WORLD = [
    *(pod("alpha", f"train-{i}") for i in range(3)),
    *(pod("beta", f"serve-{i}") for i in range(2)),
    *(node(f"gpu-{i}") for i in range(3)),
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "alpha"}},
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "gpu-reader"},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}],
    },
]
POD_NAMES = ["train-0", "train-1", "train-2", "serve-0", "serve-1"]


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(WORLD) as server:
        yield server


@pytest.fixture
def client(api: FakeKubeAPI, tmp_path: Path) -> Iterator[ApiClient]:
    config_file = str(api.kubeconfig(tmp_path))
    with kubernetes.config.new_client_from_config(config_file=config_file, context="fake") as c:
        yield c


def raw_pages(core: CoreV1Api, limit: int, token: str | None = None) -> list[dict[str, Any]]:
    """Every page of the pod list, following `metadata.continue` until it is absent."""
    pages = []
    while True:
        kwargs = {"_continue": token} if token else {}
        response = core.list_pod_for_all_namespaces(limit=limit, _preload_content=False, **kwargs)
        pages.append(json.loads(response.data))
        token = pages[-1]["metadata"].get("continue")
        if not token:
            return pages


def test_pages_follow_continue_tokens_and_return_every_pod_in_order(api, client):
    pages = raw_pages(CoreV1Api(client), limit=2)

    assert [len(page["items"]) for page in pages] == [2, 2, 1]
    assert [p["metadata"]["name"] for page in pages for p in page["items"]] == POD_NAMES
    assert {(page["kind"], page["apiVersion"]) for page in pages} == {("PodList", "v1")}
    # Like the real server: typed list items carry no kind/apiVersion, every page carries
    # the first page's resourceVersion, remainingItemCount only while more remain.
    assert all("kind" not in p and "apiVersion" not in p for page in pages for p in page["items"])
    assert len({page["metadata"]["resourceVersion"] for page in pages}) == 1
    assert [page["metadata"].get("remainingItemCount") for page in pages] == [3, 1, None]
    tokens = [query.get("continue") for _, _, query in api.requests]
    assert tokens[0] is None and all(tokens[1:])
    assert all(query["limit"] == "2" for _, _, query in api.requests)


def test_without_limit_one_page_holds_everything(client):
    (page,) = raw_pages(CoreV1Api(client), limit=0)
    assert len(page["items"]) == 5 and "continue" not in page["metadata"]


def test_typed_list_validates_and_exposes_continue(api, client):
    core = CoreV1Api(client)
    first = core.list_node(limit=1)
    assert type(first).__name__ == "V1NodeList"
    assert first.items[0].metadata.name == "gpu-0"
    assert first.metadata._continue and first.metadata.remaining_item_count == 2

    names, token = [], first.metadata._continue
    while token:
        page = core.list_node(limit=1, _continue=token)
        names += [n.metadata.name for n in page.items]
        token = page.metadata._continue
    assert names == ["gpu-1", "gpu-2"]


def test_a_kubectl_list_document_is_served_by_kind(tmp_path):
    world = json.loads((DATA / "small-cluster.json").read_text())
    with FakeKubeAPI([world]) as api:
        config_file = str(api.kubeconfig(tmp_path))
        with kubernetes.config.new_client_from_config(config_file=config_file) as c:
            namespaces = CoreV1Api(c).list_namespace()
            deployments = kubernetes.client.AppsV1Api(c).list_deployment_for_all_namespaces()
    assert len(namespaces.items) == 4 and len(deployments.items) == 1


def test_group_lists_have_their_group_version(client):
    rbac = kubernetes.client.RbacAuthorizationV1Api(client)
    roles = rbac.list_cluster_role(_preload_content=False)
    body = json.loads(roles.data)
    assert (body["kind"], body["apiVersion"]) == ("ClusterRoleList", "rbac.authorization.k8s.io/v1")
    assert rbac.list_cluster_role().items[0].rules[0].resources == ["nodes"]


def test_expired_continue_is_410_once_then_a_fresh_list_works(api, client):
    core = CoreV1Api(client)
    first = json.loads(core.list_pod_for_all_namespaces(limit=2, _preload_content=False).data)
    api.expire_continue_once(PODS)

    with pytest.raises(ApiException) as raised:
        core.list_pod_for_all_namespaces(
            limit=2, _continue=first["metadata"]["continue"], _preload_content=False
        )
    # 410 has no subclass of its own: it is a bare ApiException with the Status as text.
    assert type(raised.value) is ApiException
    assert (raised.value.status, raised.value.reason) == (410, "Gone")
    assert json.loads(raised.value.body)["reason"] == "Expired"

    pages = raw_pages(core, limit=2)
    assert [p["metadata"]["name"] for page in pages for p in page["items"]] == POD_NAMES


def test_an_unknown_continue_token_is_expired(client):
    with pytest.raises(ApiException) as raised:
        CoreV1Api(client).list_node(limit=1, _continue="not-a-token")
    assert raised.value.status == 410


def test_forbidden_is_403_with_the_rbac_message(api, client):
    api.forbid(NODES)
    with pytest.raises(kubernetes.client.exceptions.ForbiddenException) as raised:
        CoreV1Api(client).list_node()
    status = json.loads(raised.value.body)
    assert (raised.value.status, status["reason"], status["details"]) == (
        403,
        "Forbidden",
        {"kind": "nodes"},
    )
    assert 'cannot list resource "nodes" in API group "" at the cluster scope' in status["message"]

    api.allow(NODES)
    assert len(CoreV1Api(client).list_node().items) == 3


def test_a_500_mid_list_fails_that_page_once_and_is_not_retried(api, client):
    core = CoreV1Api(client)
    api.fail(PODS, status=500, times=1, after_pages=1)
    first = json.loads(core.list_pod_for_all_namespaces(limit=2, _preload_content=False).data)
    token = first["metadata"]["continue"]

    with pytest.raises(kubernetes.client.exceptions.ServiceException) as raised:
        core.list_pod_for_all_namespaces(limit=2, _continue=token, _preload_content=False)
    assert raised.value.status == 500
    assert json.loads(raised.value.body)["reason"] == "InternalError"
    assert len(api.requests) == 2  # the client does not retry a 5xx without Retry-After

    # The token is still good: the failure was the page, not the snapshot.
    pages = raw_pages(core, limit=2, token=token)
    assert [p["metadata"]["name"] for page in pages for p in page["items"]] == POD_NAMES[2:]


def test_a_slow_answer_is_a_urllib3_error_after_three_silent_retries(api, client):
    api.delay(PODS, 30)  # stop() cuts the sleep short, so this costs nothing at teardown
    with pytest.raises(urllib3.exceptions.MaxRetryError) as raised:
        CoreV1Api(client).list_pod_for_all_namespaces(_request_timeout=0.1)
    assert isinstance(raised.value.reason, urllib3.exceptions.ReadTimeoutError)
    # Not an ApiException, and urllib3's default Retry(3) resent the GET three times.
    assert [path for _, path, _ in api.requests] == [PODS] * 4


def test_stop_does_not_wait_for_a_delayed_answer(tmp_path):
    api = FakeKubeAPI(WORLD).start()
    api.delay(NODES, 30)
    config_file = str(api.kubeconfig(tmp_path))
    with kubernetes.config.new_client_from_config(config_file=config_file) as c:
        waiting = threading.Thread(target=lambda: CoreV1Api(c).list_node(_request_timeout=60))
        waiting.start()
        while not api.requests:
            time.sleep(0.01)
        started = time.monotonic()
        api.stop()
        waiting.join(timeout=5)
    assert time.monotonic() - started < 2 and not waiting.is_alive()


def test_a_wrong_token_is_401(api, client):
    api.set_token("rotated-token")
    with pytest.raises(kubernetes.client.exceptions.UnauthorizedException) as raised:
        CoreV1Api(client).list_node()
    assert json.loads(raised.value.body)["reason"] == "Unauthorized"

    api.set_token(None)  # accept anyone again
    assert CoreV1Api(client).list_node().items


def test_discovery_and_version(client):
    assert kubernetes.client.VersionApi(client).get_code().git_version == "v1.31.4"
    assert kubernetes.client.CoreApi(client).get_api_versions().versions == ["v1"]
    groups = kubernetes.client.ApisApi(client).get_api_versions().groups
    assert [g.name for g in groups] == [
        "admissionregistration.k8s.io",
        "apps",
        "batch",
        "cilium.io",
        "config.gatekeeper.sh",
        "constraints.gatekeeper.sh",
        "crd.projectcalico.org",
        "gateway.networking.k8s.io",
        "kubeflow.org",
        "kyverno.io",
        "networking.istio.io",
        "networking.k8s.io",
        "node.k8s.io",
        "nvidia.com",
        "ray.io",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "security.istio.io",
        "security.openshift.io",
    ]
    # Each group/version lists its kinds, as the live sync discovers a custom owner's plural.
    ray = kubernetes.client.CustomObjectsApi(client).get_api_resources("ray.io", "v1")
    assert {(r.name, r.kind, r.namespaced) for r in ray.resources} == {
        ("rayclusters", "RayCluster", True),
        ("rayservices", "RayService", True),
    }


def test_replaced_objects_get_a_new_resource_version_and_old_tokens_keep_theirs(api, client):
    core = CoreV1Api(client)
    before = json.loads(core.list_pod_for_all_namespaces(limit=2, _preload_content=False).data)
    api.replace_objects([pod("gamma", "new-0")])

    after = raw_pages(core, limit=2)
    assert [p["metadata"]["name"] for page in after for p in page["items"]] == ["new-0"]
    assert after[0]["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
    # A list begun before the change finishes from its own snapshot, as etcd serves it.
    rest = raw_pages(core, limit=2, token=before["metadata"]["continue"])
    assert [p["metadata"]["name"] for page in rest for p in page["items"]] == POD_NAMES[2:]


def test_requests_record_every_call_and_writes_are_refused(api, client):
    core = CoreV1Api(client)
    core.list_node()
    core.list_pod_for_all_namespaces(limit=3)
    with pytest.raises(ApiException) as raised:
        core.create_namespace({"metadata": {"name": "intruder"}})
    assert raised.value.status == 405

    assert api.requests == [
        ("GET", NODES, {}),
        ("GET", PODS, {"limit": "3"}),
        ("POST", "/api/v1/namespaces", {}),
    ]
    assert not any(path.endswith("/secrets") for _, path, _ in api.requests)


def test_typos_in_fault_paths_and_unknown_kinds_are_refused():
    api = FakeKubeAPI([])
    with pytest.raises(ValueError, match="does not serve"):
        api.forbid("/api/v1/node")
    with pytest.raises(ValueError, match="does not serve kind 'Widget'"):
        api.replace_objects([{"apiVersion": "v1", "kind": "Widget", "metadata": {}}])


def test_the_importable_fixture_starts_empty(kube_api, tmp_path):  # noqa: F811
    config_file = str(kube_api.kubeconfig(tmp_path))
    with kubernetes.config.new_client_from_config(config_file=config_file) as c:
        assert CoreV1Api(c).list_node().items == []
        kube_api.replace_objects([node("late")])
        assert [n.metadata.name for n in CoreV1Api(c).list_node().items] == ["late"]


# -- watches: the changes since a resourceVersion, framed as the API server frames them --


def watch_pods(client: ApiClient, **kwargs: Any) -> list[dict[str, Any]]:
    """One pod watch's events, read line by line as they arrive (chunks may split lines)."""
    response = CoreV1Api(client).list_pod_for_all_namespaces(
        watch=True, _preload_content=False, **kwargs
    )
    try:
        return [json.loads(line) for line in iter_resp_lines(response) if line]
    finally:
        response.release_conn()


def changed(world: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """alpha/train-0 relabelled, alpha/train-1 gone, gamma/new-0 new: one of each event."""
    objects = [copy.deepcopy(o) for o in world if o["metadata"]["name"] != "train-1"]
    for obj in objects:
        if obj["metadata"]["name"] == "train-0":
            obj["metadata"]["labels"] = {"team": "vision"}
    return [*objects, pod("gamma", "new-0")]


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return [
        (
            e["type"],
            e["object"]["kind"],
            e["object"]["apiVersion"],
            e["object"]["metadata"].get("name", ""),
        )
        for e in events
    ]


def test_a_watch_streams_the_changes_since_its_resource_version_then_a_bookmark(api, client):
    since = api.resource_version
    api.replace_objects(changed(WORLD))
    now = api.resource_version

    events = watch_pods(
        client, resource_version=since, timeout_seconds=1, allow_watch_bookmarks=True
    )

    assert now == str(int(since) + 1)
    assert summary(events) == [
        ("MODIFIED", "Pod", "v1", "train-0"),
        ("DELETED", "Pod", "v1", "train-1"),
        ("ADDED", "Pod", "v1", "new-0"),
        ("BOOKMARK", "Pod", "v1", ""),
    ]
    assert events[0]["object"]["metadata"]["labels"] == {"team": "vision"}
    assert events[1]["object"]["spec"]["containers"][0]["name"] == "main"  # its last state
    assert {e["object"]["metadata"]["resourceVersion"] for e in events} == {now}
    assert events[-1]["object"] == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": now},
    }
    assert api.requests[-1] == (
        "GET",
        PODS,
        {
            "allowWatchBookmarks": "true",
            "resourceVersion": since,
            "timeoutSeconds": "1",
            "watch": "true",
        },
    )


def test_a_watch_frames_events_as_chunked_json_lines(api, client):
    response = CoreV1Api(client).list_node(watch=True, _preload_content=False)
    assert (response.status, response.headers["Content-Type"]) == (200, "application/json")
    assert response.headers["Transfer-Encoding"] == "chunked"
    chunks = list(response.stream(amt=None))
    # One event per chunk, each a full line: what a real server flushes per event.
    assert len(chunks) == 3 and all(c.endswith(b"\n") and c.count(b"\n") == 1 for c in chunks)


def test_a_watch_with_no_change_streams_nothing_but_the_asked_bookmark(api, client):
    rv = api.resource_version
    api.replace_objects(copy.deepcopy(WORLD))  # a new resourceVersion, the same pods

    assert watch_pods(client, resource_version=rv, timeout_seconds=1) == []
    events = watch_pods(client, resource_version=rv, allow_watch_bookmarks=True)
    assert summary(events) == [("BOOKMARK", "Pod", "v1", "")]
    assert events[0]["object"]["metadata"]["resourceVersion"] == api.resource_version


@pytest.mark.parametrize("start", [{}, {"resource_version": "0"}])
def test_a_watch_from_any_version_adds_every_current_object(api, client, start):
    events = watch_pods(client, **start)
    # Sorted by namespace/name, as POD_NAMES is: alpha's three, then beta's two.
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", name) for name in POD_NAMES
    ]


@pytest.mark.parametrize("since", ["1", "99999999", "not-a-version"])
def test_a_watch_from_a_version_the_server_lacks_is_one_410_error_event(api, client, since):
    (event,) = watch_pods(client, resource_version=since, allow_watch_bookmarks=True)
    # 200 with an ERROR event, not an HTTP 410: the client has to read the stream to see it.
    assert event == {
        "type": "ERROR",
        "object": {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f"too old resource version: {since} ({api.resource_version})",
            "reason": "Expired",
            "code": 410,
        },
    }


def test_expire_watch_once_expires_the_next_watch_only(api, client):
    rv = api.resource_version
    api.expire_watch_once(PODS)
    (event,) = watch_pods(client, resource_version=rv)
    assert (event["type"], event["object"]["code"]) == ("ERROR", 410)
    assert watch_pods(client, resource_version=rv) == []


def test_the_official_watch_helper_reads_the_stream(api, client):
    rv = api.resource_version
    api.replace_objects(changed(WORLD))
    core = CoreV1Api(client)
    watch = kubernetes.watch.Watch()
    events = list(
        watch.stream(core.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=1)
    )
    assert [(e["type"], type(e["object"]).__name__) for e in events] == [
        ("MODIFIED", "V1Pod"),
        ("DELETED", "V1Pod"),
        ("ADDED", "V1Pod"),
    ]
    assert watch.resource_version == api.resource_version

    api.expire_watch_once(PODS)
    with pytest.raises(ApiException) as raised:
        list(watch.stream(core.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=1))
    assert raised.value.status == 410 and raised.value.reason.startswith("Expired: too old")


def test_forbid_and_fail_apply_to_watches(api, client):
    api.forbid(PODS)
    with pytest.raises(kubernetes.client.exceptions.ForbiddenException) as raised:
        watch_pods(client)
    assert 'cannot watch resource "pods"' in json.loads(raised.value.body)["message"]
    api.allow(PODS)

    api.fail(PODS, status=500, after_pages=1)
    assert len(watch_pods(client)) == 5  # a served watch counts as a page for after_pages
    with pytest.raises(kubernetes.client.exceptions.ServiceException) as raised:
        watch_pods(client, resource_version=api.resource_version)
    assert json.loads(raised.value.body)["reason"] == "InternalError"
    assert watch_pods(client, resource_version=api.resource_version) == []


@pytest.mark.parametrize("spelling", ["true", "True", "TRUE", "1"])
def test_every_spelling_of_watch_true_is_a_watch(api, spelling):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    response = urllib3.request("GET", f"{api.url}{NODES}?watch={spelling}", headers=auth)
    assert [json.loads(line)["type"] for line in response.data.splitlines()] == ["ADDED"] * 3
    listed = urllib3.request("GET", f"{api.url}{NODES}?watch=false", headers=auth)
    assert listed.json()["kind"] == "NodeList"


@pytest.mark.parametrize(
    "path, token, code",
    [
        (NODES, "wrong-token", 401),
        ("/api/v1/widgets", TOKEN, 404),
        ("/version", TOKEN, 405),
        ("/api/v1/nodes/gpu-0", TOKEN, 405),  # one object is watched through its list path
    ],
)
def test_a_watch_the_server_cannot_serve_is_an_error_status(api, path, token, code):
    auth = {"Authorization": f"Bearer {token}"}
    response = urllib3.request("GET", f"{api.url}{path}?watch=true", headers=auth)
    assert (response.status, response.json()["code"]) == (code, code)


def test_a_watch_is_held_open_after_its_events_up_to_its_timeout(api, client):
    api.watch_hold_seconds = 0.5
    started = time.monotonic()
    response = CoreV1Api(client).list_pod_for_all_namespaces(
        watch=True, timeout_seconds=30, _preload_content=False
    )
    lines = iter_resp_lines(response)
    next(lines)
    first = time.monotonic() - started
    assert len(list(lines)) == 4
    held = time.monotonic() - started
    assert first < 0.5 <= held < 5  # events arrive at once; the hold, not timeoutSeconds, ends it

    api.watch_hold_seconds = 30
    started = time.monotonic()
    assert len(watch_pods(client, timeout_seconds=1)) == 5
    assert 1 <= time.monotonic() - started < 5  # timeoutSeconds caps the hold


def test_stop_does_not_wait_for_a_held_watch(tmp_path):
    api = FakeKubeAPI(WORLD).start()
    api.watch_hold_seconds = 30
    config_file = str(api.kubeconfig(tmp_path))
    events: list[dict[str, Any]] = []
    with kubernetes.config.new_client_from_config(config_file=config_file) as c:
        waiting = threading.Thread(target=lambda: events.extend(watch_pods(c, timeout_seconds=60)))
        waiting.start()
        while not api.requests:
            time.sleep(0.01)
        started = time.monotonic()
        api.stop()
        waiting.join(timeout=5)
    assert time.monotonic() - started < 2 and not waiting.is_alive()
    assert len(events) == 5  # the stream still ended cleanly


# -- one Node by name --


def test_get_one_node_has_kind_and_the_current_resource_version(api, client):
    found = CoreV1Api(client).read_node("gpu-1", _preload_content=False)
    assert json.loads(found.data) == {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": "gpu-1", "resourceVersion": api.resource_version},
    }
    assert CoreV1Api(client).read_node("gpu-2").metadata.name == "gpu-2"
    assert api.requests[-1] == ("GET", "/api/v1/nodes/gpu-2", {})


def test_a_missing_node_is_404_with_a_not_found_status(client):
    with pytest.raises(kubernetes.client.exceptions.NotFoundException) as raised:
        CoreV1Api(client).read_node("gpu-9")
    assert json.loads(raised.value.body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'nodes "gpu-9" not found',
        "reason": "NotFound",
        "details": {"name": "gpu-9", "kind": "nodes"},
        "code": 404,
    }


def test_faults_on_the_node_list_apply_to_one_node(api, client):
    core = CoreV1Api(client)
    api.forbid(NODES)
    with pytest.raises(kubernetes.client.exceptions.ForbiddenException) as raised:
        core.read_node("gpu-0")
    status = json.loads(raised.value.body)
    assert status["message"].startswith('nodes "gpu-0" is forbidden: User')
    assert 'cannot get resource "nodes"' in status["message"]
    assert status["details"] == {"name": "gpu-0", "kind": "nodes"}
    api.allow(NODES)

    api.fail(NODES, status=503)
    with pytest.raises(kubernetes.client.exceptions.ServiceException):
        core.read_node("gpu-0", _request_timeout=5)
    assert core.read_node("gpu-0").metadata.name == "gpu-0"
