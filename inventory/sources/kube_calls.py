"""The list (and watch) call of each kind a live sync reads, as the official client makes it:
typed APIs for the core kinds, the custom-objects API for CRDs and admission kinds (at an older
version where the newer is not served), DRA at the newest version the server serves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from inventory.sources.base import SourceError
from inventory.sources.kube_admission import ADMISSION_CUSTOM_KINDS, FALLBACK_VERSIONS
from inventory.sources.kube_kinds import DRA_GROUP, DRA_VERSIONS, KINDS, OPTIONAL_CUSTOM_KINDS
from inventory.sources.kube_wire import api_error, decode

Call = Callable[..., Any]


def list_calls(api_client: client.ApiClient) -> list[tuple[str, Call]]:
    """(label, call) for the core kinds, the optional CRDs and the admission kinds."""
    calls: list[tuple[str, Call]] = [
        (kind, getattr(getattr(client, group)(api_client), method)) for kind, group, method in KINDS
    ]
    custom = client.CustomObjectsApi(api_client)
    for kind, group, version, plural in OPTIONAL_CUSTOM_KINDS:

        def list_call(_g=group, _v=version, _p=plural, **kwargs: Any) -> Any:
            return custom.list_cluster_custom_object(_g, _v, _p, **kwargs)

        calls.append((kind, list_call))
    for label, group, version, plural, _ in ADMISSION_CUSTOM_KINDS:

        def admission_call(_g=group, _v=version, _p=plural, **kwargs: Any) -> Any:
            asked = _v
            while True:  # each older version in turn while the answer is 404
                try:
                    return custom.list_cluster_custom_object(_g, asked, _p, **kwargs)
                except ApiException as exc:
                    older = FALLBACK_VERSIONS.get((_g, asked))
                    if exc.status != 404 or older is None:
                        raise
                    asked = older

        calls.append((label, admission_call))
    return calls


def dra_call(
    api_client: client.ApiClient, kind: str, method: str, record: Callable[[str, str], None]
) -> Call:
    """A list (or watch) of a DRA kind at the newest version the server serves: each
    version in turn while the answer is 404; `record(kind, version)` says which answered."""

    def list_call(**kwargs: Any) -> Any:
        missing: ApiException | None = None
        for version, group in DRA_VERSIONS:
            api = getattr(client, group, None)
            if api is None or not hasattr(api, method):
                continue
            try:
                answer = getattr(api(api_client), method)(**kwargs)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                missing = exc
                continue
            record(kind, version)
            return answer
        raise missing or ApiException(status=404, reason="resource.k8s.io not served")

    return list_call


def discovery_call(
    api_client: client.ApiClient, timeouts: tuple[float, float]
) -> Callable[[str, str], Any]:
    """(group, version) -> its APIResourceList; SourceError (api_error's "HTTP <status>")
    when it cannot be had."""
    custom = client.CustomObjectsApi(api_client)

    def discover(group: str, version: str) -> Any:
        try:
            response = custom.get_api_resources(
                group, version, _preload_content=False, _request_timeout=timeouts
            )
            return decode(response.data)
        except ApiException as exc:
            raise api_error(f"{group}/{version}", exc) from exc
        except (urllib3.exceptions.HTTPError, ValueError) as exc:
            raise SourceError(f"discovering {group}/{version}: {exc}", retryable=True) from exc

    return discover


def custom_kind_served(discover: Callable[[str, str], Any], label: str) -> bool:
    """Whether the API serves an optional custom kind (OPTIONAL_CUSTOM_KINDS' label) whose list
    was refused: the API server authorizes a list before it looks for the resource, so an
    account without the grant is refused (403) a CRD that is not installed just as one that
    is. Discovery, open to every account, tells them apart; True where it cannot say."""
    spec = next((c for c in OPTIONAL_CUSTOM_KINDS if c[0] == label), None)
    if spec is None:
        return True
    _, group, version, plural = spec
    try:
        found = discover(group, version)
    except SourceError as exc:
        return "HTTP 404" not in str(exc)
    resources = found.get("resources") if isinstance(found, dict) else None
    return resources is None or any(r.get("name") == plural for r in resources)


def dra_kind_served(discover: Callable[[str, str], Any], kind: str) -> bool:
    """Whether the API serves a DRA kind whose list was refused, as custom_kind_served asks
    of a CRD: at any of the versions read (DRA_VERSIONS). False only when discovery answered
    for every version and none lists the kind (a cluster without DRA); True where it cannot
    say."""
    plural = f"{kind.lower()}s"
    for version, _ in DRA_VERSIONS:
        try:
            found = discover(DRA_GROUP, version)
        except SourceError as exc:
            if "HTTP 404" in str(exc):
                continue
            return True
        resources = found.get("resources") if isinstance(found, dict) else None
        if resources is None or any(r.get("name") == plural for r in resources):
            return True
    return False


def custom_list_call(api_client: client.ApiClient, group: str, version: str, plural: str) -> Call:
    """The list (across namespaces) of one custom resource."""
    custom = client.CustomObjectsApi(api_client)

    def list_call(**kwargs: Any) -> Any:
        return custom.list_cluster_custom_object(group, version, plural, **kwargs)

    return list_call
