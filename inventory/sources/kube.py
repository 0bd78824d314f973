"""Source: a live cluster through the official `kubernetes` client.

With its calls (kube_calls, kube_watch, kube_pages), the only module that imports `kubernetes`.
Read-only: it lists the kinds below, then the custom resources their owner chains name
(kube_owners), and nothing else (never Secrets), page by page (`limit` + `continue`), and
restarts a list whose continue token expired (410 Gone; kube_pages). Responses are read as raw
JSON (`_preload_content=False`), so the objects are exactly what `kubectl get -o json` would
print, and no time is spent building client models that normalise would take apart again. A
kubeconfig's credential plugins run only when GPUPOSTURE_KUBECONFIG_EXEC_ALLOW lists them
(inventory.sources.kube_exec), checked on the parsed file before the client loads its
credentials.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import KubeConfigLoader, KubeConfigMerger

from inventory.snapshot_admission import AdmissionRead
from inventory.sources.base import Progress, SourceError, WatchDelta, WatchExpired
from inventory.sources.kube_admission import (
    GATEKEEPER_GROUP_VERSION,
    GATEKEEPER_PREFIX,
    constraint_kinds,
    fix_item,
    is_admission_label,
    read_outcome,
    resource_of,
)
from inventory.sources.kube_calls import (
    custom_kind_served,
    custom_list_call,
    discovery_call,
    dra_call,
    dra_kind_served,
    list_calls,
)
from inventory.sources.kube_exec import refuse_unlisted_commands
from inventory.sources.kube_kinds import (
    DRA_KINDS,
    DRA_LIST_METHODS,
    KINDS,
    NOT_LISTED,
    NOT_SERVED,
    OPTIONAL_KINDS,
    REFUSABLE_KINDS,
    TOLERANT_KINDS,
)
from inventory.sources.kube_owners import label_of, owners_read, slim
from inventory.sources.kube_pages import list_all
from inventory.sources.kube_retry import one_retry
from inventory.sources.kube_unread import admission_warning, unread_warning
from inventory.sources.kube_watch import probe_kind, watch_kind
from inventory.sources.kube_wire import api_error, decode, identity
from inventory.sources.nul_strings import NulReplaced, nul_replace


@dataclass(frozen=True)
class KubeSettings:
    page_size: int = 500
    connect_timeout: float = 5.0
    read_timeout: float = 60.0
    watch_seconds: int = 1  # how long the server holds each watch (all kinds in parallel)
    exec_allow: tuple[str, ...] = ()  # credential plugins a kubeconfig may run (kube_exec)


class KubeSource:
    def __init__(
        self,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        in_cluster: bool = False,
        settings: KubeSettings | None = None,
    ) -> None:
        if not in_cluster and not kubeconfig:
            raise SourceError("a kubeconfig path or in-cluster access is needed", retryable=False)
        self.kubeconfig, self.context, self.in_cluster = kubeconfig, context, in_cluster
        self.settings = settings or KubeSettings()
        # kind -> the resourceVersion of its last list, for the next sync's watches
        self.resource_versions: dict[str, str] = {}
        # DRA kind -> the version it was read at, or "not served" / "forbidden"
        self.api_versions: dict[str, str] = {}
        self.warnings: list[str] = []  # for the run: what could not be seen, and why
        self.unlisted: list[str] = []  # kinds whose list was refused (inventory.kinds_read)
        # How each admission kind's list went (K8S-009 says "unknown" for a failed one).
        self.admission_reads: list[AdmissionRead] = []
        self._plurals: dict[str, str] = {}  # Gatekeeper listing label -> its plural
        self._discover: Callable[[str, str], Any] | None = None  # the read's discovery
        self._nul = NulReplaced()  # strings of this read that held a NUL (nul_strings)

    def describe(self) -> str:
        if self.in_cluster:
            return "in-cluster service account"
        return f"kubeconfig {self.kubeconfig}" + (
            f" context {self.context}" if self.context else ""
        )

    @property
    def listed(self) -> tuple[str, ...]:
        """The kinds the last full list read to the end: none of one of them is an answer
        (none exist, or its API is not served), unlike a snapshot file's silence."""
        return tuple(k for k, rv in self.resource_versions.items() if rv != NOT_LISTED)

    def read(self, progress: Progress) -> list[dict[str, Any]]:
        api_client = self._api_client()
        self.resource_versions, self.api_versions, self.warnings = {}, {}, []
        self.admission_reads, self.unlisted, self._nul = [], [], NulReplaced()
        self._discover = discovery_call(api_client, self._timeouts())
        try:
            objects: list[dict[str, Any]] = []
            calls = self._list_calls(api_client) + self._constraint_calls(api_client)
            for kind, list_call in calls:
                if is_admission_label(kind):
                    objects.extend(self._list_admission(kind, list_call, progress))
                elif kind in OPTIONAL_KINDS:
                    objects.extend(self._list_optional(kind, list_call, progress))
                else:
                    objects.extend(self._list_all(kind, list_call, progress))
            objects.extend(self._read_owners(api_client, objects, progress))
            if replaced := self._nul.warning():
                self.warnings.append(replaced)
            return objects
        finally:
            api_client.close()

    def read_changes(self, since: dict[str, str], progress: Progress) -> WatchDelta:
        """What changed since the resourceVersions of the last sync, by one watch per kind,
        all at once (each held open `watch_seconds` by the server). WatchExpired when the
        server no longer has those changes, or a kind was never listed: list everything."""
        api_client = self._api_client(pool=len(KINDS) + len(OPTIONAL_KINDS))
        try:
            calls = [(k, c, since.get(k)) for k, c in self._list_calls(api_client)]
            # A DRA kind the last list never tried (a release before DRA was read) needs a
            # list; one it found not served (NOT_SERVED) or forbidden (NOT_LISTED) has nothing
            # to watch.
            missing = [
                k
                for k, _, rv in calls
                if not rv and (k not in OPTIONAL_KINDS or k in TOLERANT_KINDS)
            ]
            if missing:
                raise WatchExpired(f"no resourceVersion from the last list of {missing[0]}")
            # A kind the last full list could not read is asked again at every watch re-sync
            # (one item), beside the watches: still refused, the run says so again; readable
            # now, everything is listed at once, rather than leaving it unread until the next
            # full sync (GPUPOSTURE_FULL_RESYNC_HOURS) or applying one kind's list as a delta.
            unlisted = [(k, c) for k, c, rv in calls if rv == NOT_LISTED]
            calls = [(k, c, rv) for k, c, rv in calls if rv and rv not in (NOT_LISTED, NOT_SERVED)]
            with ThreadPoolExecutor(max_workers=len(calls) + len(unlisted) or 1) as pool:
                probes = [
                    pool.submit(probe_kind, kind, call, timeouts=self._timeouts())
                    for kind, call in unlisted
                ]
                answers = list(pool.map(lambda a: self._watch(*a), calls))
                probed = [probe.result() for probe in probes]
        finally:
            api_client.close()
        readable = [kind for (kind, _), (ok, _) in zip(unlisted, probed, strict=True) if ok]
        if readable:
            raise WatchExpired(f"{readable[0]} can be listed now; the last full list could not")
        delta = WatchDelta(resource_versions=dict(since))
        # One list with the source's: a Node read_node() reads while the delta is applied
        # says its NULs on the same run.
        delta.warnings = self.warnings = [warning for _, warning in probed if warning]
        nul = NulReplaced()
        for (kind, _, _), (events, version, warning) in zip(calls, answers, strict=True):
            if warning:
                delta.warnings.append(warning)
            # The last event of each object is its state now.
            latest = {identity(obj): (event_type, obj) for event_type, obj in events}
            for event_type, obj in latest.values():
                nul_replace([obj], nul)  # the changes only: few objects, each walked
                obj = fix_item(kind, obj) if is_admission_label(kind) else obj
                (delta.deleted if event_type == "DELETED" else delta.changed).append(obj)
            delta.resource_versions[kind] = version
            delta.events[kind] = len(events)
            progress(kind, len(events))
        if replaced := nul.warning():
            delta.warnings.append(replaced)
        return delta

    def read_node(self, name: str) -> dict[str, Any] | None:
        """One Node as the API has it now (None if it is gone)."""
        api_client = self._api_client()
        try:
            response = client.CoreV1Api(api_client).read_node(
                name, _preload_content=False, _request_timeout=self._timeouts()
            )
            node = decode(response.data)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise api_error("Node", exc) from exc
        except (urllib3.exceptions.HTTPError, ValueError) as exc:
            raise SourceError(f"reading node {name}: {exc}", retryable=True) from exc
        finally:
            api_client.close()
        node.setdefault("kind", "Node")
        nul = NulReplaced()
        nul_replace([node], nul)
        if replaced := nul.warning():
            self.warnings.append(replaced)
        return node

    def _list_calls(self, api_client: client.ApiClient) -> list[tuple[str, Callable[..., Any]]]:
        calls = list_calls(api_client)
        record = self.api_versions.__setitem__
        calls += [(kind, dra_call(api_client, kind, m, record)) for kind, m in DRA_LIST_METHODS]
        return calls

    def _constraint_calls(self, api_client: client.ApiClient) -> list[tuple[str, Any]]:
        """A list call per Gatekeeper constraint kind the server serves (discovered; each
        ConstraintTemplate makes one). Not served is no Gatekeeper; any other failure is
        recorded, so K8S-009 cannot pass on constraints it did not see. Constraints are read
        by full syncs only: a watch re-sync keeps the last full list's."""
        group, version = GATEKEEPER_GROUP_VERSION
        try:
            response = client.CustomObjectsApi(api_client).get_api_resources(
                group, version, _preload_content=False, _request_timeout=self._timeouts()
            )
            found = constraint_kinds(decode(response.data))
        except ApiException as exc:
            error = None if exc.status == 404 else str(api_error("constraints", exc))
            self.admission_reads.append(read_outcome(group, error or "HTTP 404"))
            if error:
                self.warnings.append(admission_warning(group, error))
            return []
        except (urllib3.exceptions.HTTPError, ValueError) as exc:
            self.admission_reads.append(read_outcome(group, f"discovery failed: {exc}"))
            self.warnings.append(admission_warning(group, f"discovery failed: {exc}"))
            return []
        custom = client.CustomObjectsApi(api_client)
        calls = []
        for kind, plural in found:

            def list_call(_p=plural, **kwargs: Any) -> Any:
                return custom.list_cluster_custom_object(group, version, _p, **kwargs)

            calls.append((f"{GATEKEEPER_PREFIX}{kind}", list_call))
        self._plurals = {f"{GATEKEEPER_PREFIX}{k}": p for k, p in found}
        return calls

    def _read_owners(
        self, api_client: client.ApiClient, objects: list[dict[str, Any]], progress: Progress
    ) -> list[dict[str, Any]]:
        """The custom resources the owner chains of `objects` name (kube_owners), cut to what
        owner resolution reads. Full syncs only: a watch re-sync keeps the last full sync's."""

        def list_owner(api_version: str, kind: str, plural: str) -> list[dict[str, Any]]:
            label, (group, _, version) = label_of(api_version, kind), api_version.rpartition("/")
            call = custom_list_call(api_client, group, version, plural)
            try:
                return self._list_all(
                    label, call, progress, keep=lambda i: slim(i, api_version, kind)
                )
            finally:
                self.resource_versions.pop(label, None)  # not watched (see above)

        found, warnings = owners_read(
            objects, discovery_call(api_client, self._timeouts()), list_owner
        )
        self.warnings.extend(warnings)
        return found

    def _list_admission(
        self, label: str, list_call: Callable[..., Any], progress: Progress
    ) -> list[dict[str, Any]]:
        resource = resource_of(label, self._plurals.get(label, ""))
        try:
            items = self._list_all(label, list_call, progress)
        except SourceError as exc:
            self.admission_reads.append(read_outcome(resource, str(exc)))
            if "HTTP 404" not in str(exc):  # not served is an answer, said nowhere
                self.warnings.append(admission_warning(resource, str(exc)))
                self.unlisted.append(label)
            if not label.startswith(GATEKEEPER_PREFIX):
                not_served = "HTTP 404" in str(exc)
                self.resource_versions[label] = NOT_SERVED if not_served else NOT_LISTED
            progress(label, 0)
            return []
        self.admission_reads.append(read_outcome(resource, None))
        if label.startswith(GATEKEEPER_PREFIX):
            self.resource_versions.pop(label, None)  # not watched: see _constraint_calls
        return [fix_item(label, item) for item in items]

    def _watch(self, kind: str, list_call: Callable[..., Any], since: str) -> Any:
        seconds = self.settings.watch_seconds
        timeouts = (self.settings.connect_timeout, seconds + self.settings.read_timeout)
        return watch_kind(kind, list_call, since, seconds=seconds, timeouts=timeouts)

    def _api_client(self, pool: int = 4) -> client.ApiClient:
        configuration = client.Configuration()
        try:
            if self.in_cluster:
                config.load_incluster_config(client_configuration=configuration)
            else:
                self._load_kubeconfig(configuration)
        except SourceError:
            raise  # a refused credential plugin says so itself
        except Exception as exc:  # noqa: BLE001 - a broken kubeconfig fails in many ways
            # (not YAML, a list where a mapping belongs, a missing file): each is bad input.
            raise SourceError(
                f"cannot load cluster credentials: {type(exc).__name__}: {exc}", retryable=False
            ) from exc
        # urllib3 would silently resend a timed-out GET three times; Celery retries instead,
        # with backoff, and the run records each attempt.
        configuration.retries = one_retry()  # a server's Retry-After wait capped
        configuration.connection_pool_maxsize = pool
        return client.ApiClient(configuration)

    def _load_kubeconfig(self, configuration: client.Configuration) -> None:
        """config.load_kube_config in its two steps, with the credential plugins checked
        between them: parsed once, so the file checked is the file used, and nothing has run
        when a plugin is refused."""
        merged = KubeConfigMerger(self.kubeconfig)
        if merged.config is None:
            raise ConfigException(f"{self.kubeconfig}: no configuration found")
        users = [getattr(u, "value", u) for u in merged.config.value.get("users") or []]
        refuse_unlisted_commands(users, self.settings.exec_allow, shutil.which)
        KubeConfigLoader(
            config_dict=merged.config,
            active_context=self.context or None,
            config_base_path=None,
            config_persister=merged.save_changes,
        ).load_and_set(configuration)

    def _list_all(
        self,
        kind: str,
        list_call: Any,
        progress: Progress,
        keep: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """kube_pages.list_all with this source's settings, into this read's resourceVersions."""
        return list_all(
            kind,
            list_call,
            progress,
            page_size=self.settings.page_size,
            timeouts=self._timeouts(),
            versions=self.resource_versions,
            keep=keep,
            nul=self._nul,
        )

    def _list_optional(
        self, kind: str, list_call: Callable[..., Any], progress: Progress
    ) -> list[dict[str, Any]]:
        """A kind that may be absent: not served (404: no CRD, no API group) is an empty
        answer. A DRA kind also records how it was read. An account that may not list a DRA
        kind or a REFUSABLE_KINDS one (401, 403) is a warning on the run, not a failure: only
        what that kind shows goes unseen. A 403 on a kind discovery says is not served (no CRD,
        no DRA) is not served: the server authorizes a list before it looks."""
        dra = kind in DRA_KINDS
        try:
            return self._list_all(kind, list_call, progress)
        except SourceError as exc:
            not_served = "HTTP 404" in str(exc)
            refused = not not_served and ("HTTP 403" in str(exc) or "HTTP 401" in str(exc))
            if refused and "HTTP 403" in str(exc) and self._discover:
                served = dra_kind_served if dra else custom_kind_served
                if not served(self._discover, kind):  # no CRD installed, no DRA served
                    not_served, refused = True, False
            if not (not_served or (refused and (dra or kind in REFUSABLE_KINDS))):
                raise
            if dra:
                self.api_versions[kind] = "not served" if not_served else "forbidden"
            if dra or refused or kind in REFUSABLE_KINDS:
                # Nothing to watch until the next full list (which tries the kind again).
                self.resource_versions[kind] = NOT_SERVED if not_served else NOT_LISTED
            if refused:
                self.warnings.append(unread_warning(kind, str(exc)))
                self.unlisted.append(kind)
            progress(kind, 0)
            return []

    def _timeouts(self) -> tuple[float, float]:
        return (self.settings.connect_timeout, self.settings.read_timeout)
