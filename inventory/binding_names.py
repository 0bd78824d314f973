"""The names of the bindings (and roles) another tenant's principals are a subject of, and of
other parties' pods: what a tenant viewer may not read named (inventory.presenter.
hidden_scope_for)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from inventory.models import ClusterObject


def their_bindings(principals: set[str], namespaces: set[str], own: set[str]) -> frozenset[str]:
    """Names of the bindings another tenant's principals (or its service accounts) are a
    subject of, outside the viewer's own namespaces (a ClusterRoleBinding, or a RoleBinding
    in a platform or unclaimed namespace such as gpu-operator), and of the roles only such
    bindings use: a binding concerns the viewer alone only if its subjects are all theirs,
    and its name often carries the other tenant's ("beta-admins"). A binding in a hidden
    namespace is hidden by its name too (a title names it without its namespace); one in the
    viewer's own namespace is theirs to read (they
    list it with kubectl, and must to act on K8S-008). One query, small rows."""
    if not principals and not namespaces:
        return frozenset()
    rows = ClusterObject.objects.filter(kind="binding").values_list(
        "name", "namespace", "data__subjects", "data__role_kind", "data__role_name"
    )
    theirs: set[str] = set()
    roles_theirs: set[str] = set()
    roles_shared: set[str] = set()
    for name, namespace, subjects, role_kind, role_name in rows:
        if namespace in own:
            continue
        names_them = _any_theirs(subjects, principals, namespaces)
        if names_them or namespace in namespaces:
            # Stored as "ClusterRoleBinding/NAME" or "RoleBinding/NAME"; findings name it NAME,
            # titles without its namespace, so one in a hidden namespace is hidden by name too.
            theirs.add(name.rsplit("/", 1)[-1])
        if role_kind in ("ClusterRole", "Role") and role_name and not _builtin_role(role_name):
            (roles_theirs if names_them else roles_shared).add(role_name)
    return frozenset(theirs | (roles_theirs - roles_shared))


# Kubernetes' own ClusterRoles: names every cluster has (and words like "edit" that any text
# may hold), never a tenant's.
BUILTIN_ROLES = frozenset({"cluster-admin", "admin", "edit", "view"})


def _builtin_role(name: str) -> bool:
    return name in BUILTIN_ROLES or name.startswith("system:")


def _any_theirs(subjects: Any, principals: set[str], namespaces: set[str]) -> bool:
    if not subjects or not isinstance(subjects, list):
        return False
    for subject in subjects:
        kind = str(subject.get("kind", "")).lower()
        if kind == "serviceaccount":
            if subject.get("namespace") in namespaces:
                return True
        elif f"{kind}:{subject.get('name')}" in principals:
            return True
    return False


def their_pods(
    theirs: Iterable[str],
    own: Iterable[str],
    unclaimed_pods: Iterable[str],
    unclaimed: Mapping[int, frozenset[str]],
) -> frozenset[str]:
    """The names of other parties' pods (tenants.redaction HiddenScope.typed_objects): the
    hidden tenants' (`theirs`) and the unclassified party's (`unclaimed_pods`, each as
    "<cluster id>:<namespace>/<name>", kept where `unclaimed` says the namespace is that
    party's in that cluster), less every name one of the viewer's own pods bears: a name
    they hold themselves is theirs to read, and tells them nothing of anyone else."""
    names = set(theirs)
    for word in unclaimed_pods:
        cluster_id, _, rest = word.partition(":")
        namespace, _, name = rest.partition("/")
        if cluster_id.isdigit() and namespace in unclaimed.get(int(cluster_id), ()):
            names.add(name)
    return frozenset(names - set(own))
