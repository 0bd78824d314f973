"""Which verbs of an RBAC rule write inside a namespace. PURE.

A write is any verb that changes objects or rights (create, update, patch, delete,
deletecollection, `*`, escalate, bind, impersonate) on a resource that lives in a namespace:
a rule on cluster-scoped resources only (nodes, ClusterRoles, the GPU Operator's ClusterPolicy)
or on reviews that store nothing writes in none. K8S-008 (cross_tenant) asks it of every grant.
"""

from __future__ import annotations

from inventory.rbac import ANY
from inventory.snapshot import PolicyRule

WRITE_VERBS = (
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "escalate",
    "bind",
    "impersonate",
)

# OpenShift's cluster-scoped identity and OAuth objects (its defaults let every authenticated
# user delete their own tokens and impersonate scopes).
OPENSHIFT_CLUSTER_SCOPED = (
    "oauthaccesstokens",
    "oauthauthorizetokens",
    "useroauthaccesstokens",
    "oauthclients",
    "oauthclientauthorizations",
    "identities",
    "useridentitymappings",
    "projectrequests",
    "scopes",
)

# Cluster-scoped resources: a rule naming only these grants nothing inside a namespace (but
# a Namespace object is asked about in its own namespace: write_verbs). The built-ins, and the
# custom resources of the stacks the product knows whose CRDs say `scope: Cluster`. The
# snapshot reads no CRD, so a custom resource not named here is of unknown scope and still
# counted as namespaced (a write it may be), never dropped on a guess.
CLUSTER_SCOPED = frozenset(
    {
        "nodes",
        "namespaces",
        "persistentvolumes",
        "clusterroles",
        "clusterrolebindings",
        "customresourcedefinitions",
        "storageclasses",
        "priorityclasses",
        "csidrivers",
        "csinodes",
        "volumeattachments",
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
        "validatingadmissionpolicies",
        "validatingadmissionpolicybindings",
        "apiservices",
        "certificatesigningrequests",
        "runtimeclasses",
        "ingressclasses",
        "deviceclasses",
        "resourceslices",
        "resourceclasses",  # DRA's v1alpha2 predecessor of DeviceClass
        "flowschemas",
        "prioritylevelconfigurations",
        "componentstatuses",
        "clustertrustbundles",
        "volumeattributesclasses",
        "mutatingadmissionpolicies",
        "mutatingadmissionpolicybindings",
        "servicecidrs",
        "ipaddresses",
        "storageversions",
        # The GPU Operator's ClusterPolicy and NVIDIADriver (nvidia.com), the Network
        # Operator's NicClusterPolicy (mellanox.com) and Node Feature Discovery's
        # NodeFeatureRule (nfd.k8s-sigs.io): cluster-scoped CRDs. Not the Network Operator's
        # HostDeviceNetwork, IPoIBNetwork or MacvlanNetwork: cluster-scoped too, but each names
        # a networkNamespace the operator writes a NetworkAttachmentDefinition in.
        "clusterpolicies",
        "nvidiadrivers",
        "nicclusterpolicies",
        "nodefeaturerules",
        "tokenreviews",
        "subjectaccessreviews",
        "selfsubjectaccessreviews",
        "selfsubjectrulesreviews",
        *OPENSHIFT_CLUSTER_SCOPED,
        # What impersonation names (and OpenShift's user.openshift.io users and groups): asked
        # about with no namespace, so granted by no RoleBinding. Impersonating one is a way to
        # its rights, followed as an escalation path, not a write in any namespace itself.
        "users",
        "groups",
        "userextras",
        "uids",
    }
)


# The API groups a cluster-scoped name above belongs to, where it is not a built-in's (the core
# group or a `*.k8s.io` one): a name is only a name, and another group may serve a namespaced
# resource of it (Cluster API's `ipam.cluster.x-k8s.io` IPAddress is namespaced; so are ACK's
# `iam.services.k8s.aws` users and groups). A rule is judged cluster-scoped only for groups
# known to serve the name so. `*` names the built-in too, and keeps that reading except for a
# name some other group serves namespaced (NAMESPACED_TWINS): there it names that one as well.
_OPENSHIFT = ("openshift.io",)
CUSTOM_GROUPS: dict[str, tuple[str, ...]] = {
    "clusterpolicies": ("nvidia.com",),
    "nvidiadrivers": ("nvidia.com",),
    "nicclusterpolicies": ("mellanox.com",),
    "nodefeaturerules": ("nfd.k8s-sigs.io",),
    **{name: _OPENSHIFT for name in (*OPENSHIFT_CLUSTER_SCOPED, "users", "groups")},
}


NAMESPACED_TWINS = frozenset({"users", "groups", "ipaddresses"})


def cluster_scoped(resource: str, api_groups: tuple[str, ...]) -> bool:
    """Whether `resource` of a rule naming `api_groups` is a cluster-scoped resource: its name
    is one, and every group the rule names serves it so (the core group and `*.k8s.io` serve
    the built-ins and impersonation's users and groups; OpenShift's legacy core group its own)."""
    name = resource.split("/")[0]
    if name not in CLUSTER_SCOPED:
        return False
    known = CUSTOM_GROUPS.get(name, ())
    for group in api_groups or ("",):
        if group == "*" and name in NAMESPACED_TWINS:
            return False
        if group in ("*", "") or group.endswith(".k8s.io"):
            continue
        if not any(group == k or group.endswith("." + k) for k in known):
            return False
    return True


# Reviews and checks: `create` asks the API server a question and stores nothing
# (system:basic-user grants every authenticated user the self reviews); a rule naming only
# these writes nothing.
REVIEWS = frozenset(
    {
        "selfsubjectreviews",
        "selfsubjectaccessreviews",
        "selfsubjectrulesreviews",
        "subjectaccessreviews",
        "localsubjectaccessreviews",
        "tokenreviews",
        # OpenShift's build-strategy and webhook checks: bound to every user by default, they
        # say which builds one may run where one may create builds (or holds the webhook's
        # secret), and write nothing themselves.
        "builds/docker",
        "builds/optimizeddocker",
        "builds/source",
        "builds/custom",
        "builds/jenkinspipeline",
        "buildconfigs/webhooks",
    }
)


def write_verbs(rule: PolicyRule, namespace: str | None = None) -> tuple[str, ...]:
    """The rule's write verbs, when it names a namespaced resource at all, or the Namespace
    object `namespace` itself (the authorizer asks about a Namespace in its own namespace, so
    relabelling it, e.g. its tenant or pod-security labels, is a write there too). Verbs
    compare exactly, as the authorizer compares them."""
    verbs = tuple(v for v in rule.verbs if v == ANY or v in WRITE_VERBS)
    namespaced = any(
        r == ANY or (not cluster_scoped(r, rule.api_groups) and r not in REVIEWS)
        for r in rule.resources
    )
    itself = (
        namespace is not None
        and any(r.split("/")[0] == "namespaces" for r in rule.resources)
        and (not rule.resource_names or namespace in rule.resource_names)
    )
    return verbs if namespaced or itself else ()
