"""How a sync run's warnings and error name a Kubernetes object. PURE.

A tenant viewer reads the runs of their clusters with every other party's names hidden
(tenants.redaction, docs/access.md), and the redaction knows an object by its namespace: it
hides `namespace/name` whole where the namespace is another tenant's or nobody's, but cannot
tell a bare object name from a word of prose ("pod orbit-trainer-0" would stay in view). So a
message names an object in a namespace as `Kind namespace/name`; where that would not read as
one name (a name the API server would refuse: a NUL, a space, a '/'), by its namespace alone,
and where the namespace is no such name either, by its kind alone (the item's index or place
says which). A cluster-scoped object (a Node, a ClusterRole) is named by its name: it is in no
tenant's namespace.
"""

from __future__ import annotations

from gpuposture.base.echo import echoed
from tenants.redaction import one_name

_PLAIN_MAX = 120  # a longer name (or one with control characters) is quoted and cut


def object_ref(kind: str, namespace: str | None, name: str) -> str:
    """`kind` and the object named so a viewer's redaction hides another party's."""
    if not namespace:
        return f"{kind} {name if one_name(name) else echoed(name)}"
    if not one_name(namespace):
        return f"a {kind} in a namespace named unlike Kubernetes names"
    if not one_name(name):
        return f"a {kind} in namespace {namespace}"
    return f"{kind} {namespace}/{name}"


def shown(value: object) -> str:
    """A cluster-scoped name as written, or quoted (echoed) where it is long or holds a
    control character."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= _PLAIN_MAX and text.isprintable():
        return text
    return echoed(value)
