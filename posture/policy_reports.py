"""Findings as Kubernetes policy reports: `openreports.io/v1alpha1` Report / ClusterReport and
the older `wgpolicyk8s.io/v1alpha2` PolicyReport / ClusterPolicyReport, the objects Kyverno,
Policy Reporter and the Backstage plugins display. PURE: takes the API's finding rows
(posture.finding_rows, already presented for the reader) and the check catalogue.

One report per (cluster, namespace) for findings about a namespaced object, one cluster-scoped
report per cluster for the rest (nodes, pools, cluster-wide settings). Field names, enums and
required fields follow the upstream CRDs (tests/posture/test_policy_reports.py holds them as a
schema): `results` and `summary` sit at the top level, not under a spec; `properties` is a map
of strings; `timestamp` is `{seconds, nanos}`; `severity` is one of critical/high/medium/low/
info; `result` one of pass/fail/warn/error/skip."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gpuposture.base.enums import FindingStatus


@dataclass(frozen=True)
class ReportFormat:
    api_version: str
    kind: str  # namespaced
    cluster_kind: str
    source_field: bool  # openreports has a report-level `source`; v1alpha2 has none


REPORT_FORMATS = {
    "openreports": ReportFormat("openreports.io/v1alpha1", "Report", "ClusterReport", True),
    "policyreport": ReportFormat(
        "wgpolicyk8s.io/v1alpha2", "PolicyReport", "ClusterPolicyReport", False
    ),
}
SOURCE = "gpuposture"
SEVERITIES = ("critical", "high", "medium", "low", "info")  # the CRDs' enum
# A finding's lifecycle as a report result: open fails; an accepted risk is still unmet but
# no longer scored, which is the CRDs' "warn"; resolved passes. Anything else was not judged.
RESULTS: dict[str, str] = {
    FindingStatus.OPEN: "fail",
    FindingStatus.ACCEPTED: "warn",
    FindingStatus.RESOLVED: "pass",
}
SUMMARY_KEYS = ("pass", "fail", "warn", "error", "skip")

# Subject kinds that are Kubernetes objects -> their apiVersion. Other subjects (a pool, a
# sharing mode, a provider, a bulletin exposure) are not objects a report can reference:
# they are named in the result's properties instead. A workload subject whose evidence says
# the apiVersion its owner reference gave (`workload_api_version`: a Rollout, a CloneSet, a
# Kruise StatefulSet) is referenced by that.
API_VERSIONS = {
    "Pod": "v1",
    "Node": "v1",
    "Namespace": "v1",
    "ConfigMap": "v1",
    "ServiceAccount": "v1",
    "Service": "v1",
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1",
    "Notebook": "kubeflow.org/v1",
    "Role": "rbac.authorization.k8s.io/v1",
    "RoleBinding": "rbac.authorization.k8s.io/v1",
    "ClusterRole": "rbac.authorization.k8s.io/v1",
    "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
    "Ingress": "networking.k8s.io/v1",
    "NetworkPolicy": "networking.k8s.io/v1",
    "ResourceQuota": "v1",
    "ResourceClaim": "resource.k8s.io/v1",
    "ClusterPolicy": "nvidia.com/v1",
}
_NAME_UNSAFE = re.compile(r"[^a-z0-9.-]+")


def report_documents(
    kind: str,
    rows: Iterable[Mapping[str, Any]],
    checks: Mapping[str, Any],
    *,
    link: str = "",
    namespaces: frozenset[str] | None = None,
) -> list[dict[str, Any]]:
    """The reports for `rows`, namespaced reports first (by cluster, namespace), then one
    cluster report per cluster. `link`: the URL a finding id is appended to (the API's finding
    detail). `namespaces`: when given (a tenant viewer), findings about objects in any other
    namespace are left out; cluster-scoped findings stay (the rows are already redacted)."""
    form = REPORT_FORMATS[kind]
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        namespace = row.get("subject_namespace") or ""
        if namespace and namespaces is not None and namespace not in namespaces:
            continue
        key = (row.get("cluster") or "", namespace)
        grouped.setdefault(key, []).append(report_result(row, checks, link))
    namespaced = sorted(k for k in grouped if k[1])
    clustered = sorted(k for k in grouped if not k[1])
    return [_report(form, cluster, ns, grouped[(cluster, ns)]) for cluster, ns in namespaced] + [
        _report(form, cluster, "", grouped[(cluster, "")]) for cluster, _ in clustered
    ]


def report_json(documents: list[dict[str, Any]]) -> Iterator[str]:
    """The reports as one JSON document: a single report is the object itself, several (or
    none) a `v1` `List` holding them in `items`, as `kubectl get -o json` writes a list. JSON
    is YAML, so `kubectl apply -f` takes it as it took the multi-document YAML this used to
    be, and a client reads it with any JSON parser (json.dumps: PyYAML's emitter is pure
    Python and took minutes on the largest export allowed, json.dumps a few seconds)."""
    document = documents[0] if len(documents) == 1 else report_list(documents)
    yield json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def report_list(documents: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": documents}


def report_items(document: Mapping[str, Any]) -> list[Any]:
    """The reports of what report_json wrote: the List's items, or the one report."""
    if document.get("kind") == "List":
        return list(document.get("items") or [])
    return [document]


def report_name(cluster: str) -> str:
    """A DNS subdomain naming the report of one cluster: one report per namespace already."""
    slug = _NAME_UNSAFE.sub("-", f"{SOURCE}-{cluster}".lower()).strip("-.")
    return slug[:253] or SOURCE


def _report(
    form: ReportFormat, cluster: str, namespace: str, results: list[dict[str, Any]]
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": report_name(cluster),
        "labels": {
            "app.kubernetes.io/managed-by": SOURCE,
            "gpuposture.io/cluster": _label_value(cluster),
        },
    }
    if namespace:
        metadata["namespace"] = namespace
    document: dict[str, Any] = {
        "apiVersion": form.api_version,
        "kind": form.kind if namespace else form.cluster_kind,
        "metadata": metadata,
    }
    if form.source_field:
        document["source"] = SOURCE
    if namespace:
        document["scope"] = {"apiVersion": "v1", "kind": "Namespace", "name": namespace}
    summary = dict.fromkeys(SUMMARY_KEYS, 0)
    for result in results:
        summary[result["result"]] += 1
    document["summary"] = summary
    document["results"] = results
    return document


def report_result(
    row: Mapping[str, Any], checks: Mapping[str, Any], link: str = ""
) -> dict[str, Any]:
    """One finding as a report result: the check is the policy, its title the rule."""
    check = checks.get(row["check"])
    result = RESULTS.get(row.get("status") or "", "skip")
    severity = row.get("severity") if row.get("severity") in SEVERITIES else "info"
    out: dict[str, Any] = {
        "source": SOURCE,
        "policy": row["check"],
        "rule": check.title if check else row["check"],
        "category": row["check"].split("-", 1)[0],
        "severity": severity,
        "timestamp": _timestamp(row.get("last_seen")),
        "result": result,
        "scored": result != "warn",
        "message": row.get("title") or "",
    }
    resource = _resource(row)
    if resource:
        out["resources"] = [resource]
    out["properties"] = _properties(row, link)
    return out


def _resource(row: Mapping[str, Any]) -> dict[str, str] | None:
    kind = row.get("subject_kind") or ""
    told = _told_api_version(row)
    if told is not None:
        # A custom resource named with its group where it shares a built-in's kind name
        # (StatefulSet.apps.kruise.io) is kind StatefulSet of that group's apiVersion.
        kind, api_version = kind.partition(".")[0], told
    else:
        api_version = API_VERSIONS.get(kind, "")
    if not api_version or not row.get("subject_name"):
        return None
    ref = {"apiVersion": api_version, "kind": kind, "name": row["subject_name"]}
    if row.get("subject_namespace"):
        ref["namespace"] = row["subject_namespace"]
    return ref


def _told_api_version(row: Mapping[str, Any]) -> str | None:
    """The apiVersion the workload subject's owner reference gave (its evidence's
    `workload_api_version`, for the workload the evidence names as the subject), where its
    group agrees with the subject's kind; None where the snapshot did not say."""
    evidence = row.get("evidence")
    if not isinstance(evidence, Mapping):
        return None
    told = evidence.get("workload_api_version")
    kind, namespace, name = (
        row.get(k) or "" for k in ("subject_kind", "subject_namespace", "subject_name")
    )
    subject = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
    if not isinstance(told, str) or not told or evidence.get("workload") != subject:
        return None
    group = told.rpartition("/")[0]
    qualifier = kind.partition(".")[2]
    # A built-in kind ("Deployment", group apps) or one named with its group, which must agree.
    return told if (qualifier == group if qualifier else "." not in kind) else None


def _properties(row: Mapping[str, Any], link: str) -> dict[str, str]:
    """The finding's identity and context, as strings (the CRDs allow only string values)."""
    props = {
        "findingId": str(row["id"]),
        "cluster": row.get("cluster") or "",
        "status": row.get("status") or "",
        "tenants": ",".join(row.get("tenants") or []),
        "subject": "/".join(
            p
            for p in (
                row.get("subject_kind"),
                row.get("subject_namespace"),
                row.get("subject_name"),
            )
            if p
        ),
        "firstSeen": str(row.get("first_seen") or ""),
        "lastSeen": str(row.get("last_seen") or ""),
        "mappings": " ".join(row.get("mappings") or []),
        "remediation": row.get("remediation") or "",
        "evidence": json.dumps(row.get("evidence"), sort_keys=True, default=str),
    }
    if link:
        props["link"] = f"{link}{row['id']}/"
    if row.get("status") == "accepted":
        props["acceptedReason"] = row.get("accepted_reason") or ""
        props["acceptedUntil"] = str(row.get("accepted_until") or "")
    return {k: v for k, v in props.items() if v != ""}


def _timestamp(value: Any) -> dict[str, int]:
    """metav1.Timestamp: whole seconds since the epoch and the nanoseconds beyond them."""
    when = value if isinstance(value, datetime) else _parse(value)
    if when is None:
        return {"seconds": 0, "nanos": 0}
    return {"seconds": int(when.timestamp()), "nanos": when.microsecond * 1000}


def _parse(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _label_value(text: str) -> str:
    """A label value: at most 63 characters of [A-Za-z0-9._-], starting and ending
    alphanumeric (cluster names are free text in the registry)."""
    value = re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:63]
    return value.strip("-._")
