"""The admission rules of a policy pack: CEL expressions, each tied to the check it enforces.

PURE: strings only. The same expressions go into both dialects (ValidatingAdmissionPolicy
`validations` and Kyverno `validate.cel.expressions`) and into the impact preview, which
evaluates them with a real CEL implementation: the preview never re-implements a rule.

Only core CEL is used (no Kubernetes extension libraries such as `split` or quantities): the
expressions must mean the same to the API server, Kyverno and cel-python. Lists in the
parameters are strings delimited by commas on both ends (",a,b,") so membership is a core
`contains(',' + x + ',')`; a ConfigMap can only hold strings.

The pod variables (`containers`, `gpuPod`) and POD-011's condition are built in
enforcement.gpu_access, POD-003's in enforcement.host_paths.
"""

from __future__ import annotations

from dataclasses import dataclass

from enforcement.gpu_access import ANNOTATED_FRACTION, VISIBLE_DEVICES
from enforcement.host_paths import host_path_expression
from posture.rules.pod.hardening import DANGEROUS_CAPABILITIES as POD_004_CAPABILITIES

# Every capability POD-004 reports, critical or high: SYS_ADMIN and ALL, and the others that
# each weaken the node's or another tenant's isolation on their own (SYS_PTRACE, NET_ADMIN, ...).
# Kubernetes passes capability names through as written and runtimes accept either case and
# the CAP_ prefix; core CEL has no upper-casing, so each spelling is listed.
DANGEROUS_CAPABILITIES = tuple(
    f"{prefix}{spelling}"
    for name in POD_004_CAPABILITIES
    for spelling in dict.fromkeys((name, name.lower(), name.title()))
    for prefix in (("",) if name == "ALL" else ("", "CAP_", "cap_"))
)
MIG_COMPUTE_INSTANCE = "^nvidia[.]com/mig-[0-9]+c[.]"  # mig-1c.3g.40gb: mig_ci sharing


def _quoted(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{i}'" for i in items) + "]"


def _has_flag(path: str) -> str:
    return f"(has({path}) && {path})"


def _set(path: str) -> str:
    """`path` is present and true, every field on the way guarded by has() (a missing parent
    is an evaluation error in CEL, which would deny)."""
    root, *fields = path.split(".")
    guards = [f"has({root}.{'.'.join(fields[: i + 1])})" for i in range(len(fields))]
    return "(" + " && ".join([*guards, path]) + ")"


# POD-001: privileged, or a Windows HostProcess container (a process on the node with its
# full access), whether the container or the pod's securityContext makes it one. The API
# server refuses a pod whose pod and container values differ, so a pod-level true means
# every container is one (Pod Security's baseline forbids both fields the same way).
_NO_PRIVILEGED = (
    "variables.containers.all(c, !("
    f"{_set('c.securityContext.privileged')}"
    f" || {_set('c.securityContext.windowsOptions.hostProcess')}))"
    f" && !{_set('object.spec.securityContext.windowsOptions.hostProcess')}"
)


def _approved(mode: str) -> str:
    return f"params.data.approvedModes.contains(',{mode},')"


_SHARING = (
    "variables.containers.all(c, !has(c.resources) || "
    "[has(c.resources.limits) ? c.resources.limits : {}, "
    "has(c.resources.requests) ? c.resources.requests : {}].all(m, m.all(k, "
    "!k.startsWith('nvidia.com/') || ("
    f"(!k.matches('{MIG_COMPUTE_INSTANCE}') || {_approved('mig_ci')})"
    f" && (!k.endsWith('.shared') || {_approved('time_slicing')} || {_approved('mps')})"
    " && !params.data.unapprovedResources.contains(',' + k + ',')))))"
    f" && (!{ANNOTATED_FRACTION} || {_approved('time_slicing')})"
)

_REQUESTS_EQUAL_LIMITS = (
    "variables.containers.all(c, !has(c.resources) || !has(c.resources.requests)"
    " || c.resources.requests.all(k, !k.startsWith('nvidia.com/')"
    " || (has(c.resources.limits) && k in c.resources.limits"
    " && string(c.resources.limits[k]) == string(c.resources.requests[k]))))"
)

_POOL_PLACEMENT = (
    "!variables.gpuPod || params.data.poolTaintKey == '' || ("
    "has(object.spec.tolerations) && object.spec.tolerations.exists(t, has(t.key)"
    " && t.key == params.data.poolTaintKey"
    " && ((has(t.operator) && t.operator == 'Exists')"
    " || (has(t.value) && t.value == params.data.poolTaintValue)))"
    " && has(object.spec.nodeSelector) && params.data.poolLabelKey in object.spec.nodeSelector"
    " && object.spec.nodeSelector[params.data.poolLabelKey] == params.data.poolLabelValue)"
)

_FOREIGN_TAINTS = (
    "!has(object.spec.tolerations) || object.spec.tolerations.all(t,"
    " !((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists')"
    " && !(has(t.key) && has(t.operator) && t.operator == 'Exists'"
    " && params.data.foreignTaintKeys.contains(',' + t.key + ','))"
    " && !(has(t.key) && params.data.foreignTaints.contains("
    "',' + t.key + '=' + (has(t.value) ? t.value : '') + ',')))"
)


def _is_principal(kind: str, value: str) -> str:
    return f"params.data.principals.contains(',{kind}:' + {value} + ',')"


_NODE_PATCHES = (
    f"!({_is_principal('user', 'request.userInfo.username')}"
    " || (has(request.userInfo.groups) && request.userInfo.groups.exists(g, "
    f"{_is_principal('group', 'g')})))"
    " || ((has(object.metadata.labels) ? object.metadata.labels : {})"
    " == (has(oldObject.metadata.labels) ? oldObject.metadata.labels : {})"
    " && (has(object.spec.taints) ? object.spec.taints : [])"
    " == (has(oldObject.spec.taints) ? oldObject.spec.taints : []))"
)


@dataclass(frozen=True)
class Rule:
    id: str  # a DNS label: policy and rule names are built from it
    check: str  # the catalogue check it enforces (posture.catalogue)
    target: str  # the resource it judges: "pods", "resourceclaims", ... or "nodes" (KINDS)
    expression: str  # true: admitted
    message: str
    # Pod rules read the tenant's parameters; the node rule the principals' (one for all).
    uses_params: bool = True


POD_RULES: tuple[Rule, ...] = (
    Rule(
        "no-privileged",
        "POD-001",
        "pods",
        _NO_PRIVILEGED,
        "Privileged containers and Windows HostProcess containers are not allowed in tenant "
        "namespaces (POD-001).",
        uses_params=False,
    ),
    Rule(
        "no-sys-admin",
        "POD-004",
        "pods",
        "variables.containers.all(c, !(has(c.securityContext)"
        " && has(c.securityContext.capabilities) && has(c.securityContext.capabilities.add)"
        " && c.securityContext.capabilities.add.exists(a, a in "
        f"{_quoted(DANGEROUS_CAPABILITIES)})))",
        "Adding SYS_ADMIN, ALL or another capability that breaks isolation (NET_ADMIN, "
        "NET_RAW, SYS_PTRACE, SYS_MODULE, BPF, ...) is not allowed in tenant namespaces "
        "(POD-004).",
        uses_params=False,
    ),
    Rule(
        "no-host-namespaces",
        "POD-002",
        "pods",
        f"!{_has_flag('object.spec.hostPID')} && !{_has_flag('object.spec.hostIPC')}"
        f" && !{_has_flag('object.spec.hostNetwork')}",
        "hostPID, hostIPC and hostNetwork are not allowed in tenant namespaces (POD-002).",
        uses_params=False,
    ),
    Rule(
        "no-host-paths",
        "POD-003",
        "pods",
        host_path_expression(),
        "hostPath volumes of the node's devices, kernel interfaces, configuration, logs, the "
        "kubelet's or the container runtime's state and sockets (or a parent of them; host "
        "programs and libraries when writable) are not allowed in tenant namespaces (POD-003).",
        uses_params=False,
    ),
    Rule(
        "no-visible-devices-without-gpu",
        "POD-011",
        "pods",
        VISIBLE_DEVICES,
        "NVIDIA_VISIBLE_DEVICES (in env, or from a ConfigMap known to set it) needs an "
        "nvidia.com/* resource limit in the same container, or a DRA claim of the pod; a KAI "
        "fraction's own container, where KAI's binder sets it, is exempt (POD-011).",
    ),
    Rule(
        "gpu-requests-equal-limits",
        "POD-006",
        "pods",
        _REQUESTS_EQUAL_LIMITS,
        "Every nvidia.com/* resource request needs an equal limit (POD-006).",
        uses_params=False,
    ),
    Rule(
        "class-pool-placement",
        "POD-009",
        "pods",
        _POOL_PLACEMENT,
        "GPU pods of this tenant's trust class must tolerate the class's pool taint and select "
        "its nodes with the class's nodeSelector (POD-009).",
    ),
    Rule(
        "no-foreign-pool-tolerations",
        "POD-009",
        "pods",
        _FOREIGN_TAINTS,
        "Tolerating another trust class's pool taint (or every taint) is not allowed (POD-009).",
    ),
    Rule(
        "approved-sharing-modes",
        "SHARE-004",
        "pods",
        _SHARING,
        "This GPU resource or fraction uses a sharing mode the tenant has no active approval "
        "for on this cluster (SHARE-004).",
    ),
)


def _no_admin_access(devices: str) -> str:
    return (
        f"!has({devices}) || !has({devices}.requests) || {devices}.requests.all(r,"
        " !(has(r.exactly) && has(r.exactly.adminAccess) && r.exactly.adminAccess))"
    )


_ADMIN_ACCESS_MESSAGE = (
    "DRA requests with adminAccess are not allowed in tenant namespaces: they reach devices "
    "other tenants hold (DRA-001)."
)
# resource.k8s.io/v1 (Kubernetes 1.34+): the API server converts older versions' requests to
# it for a VAP (matchPolicy Equivalent); Kyverno matches v1 objects as written.
CLAIM_RULES: tuple[Rule, ...] = (
    Rule(
        "no-dra-admin-access",
        "DRA-001",
        "resourceclaims",
        _no_admin_access("object.spec.devices"),
        _ADMIN_ACCESS_MESSAGE,
        uses_params=False,
    ),
    Rule(
        "no-dra-admin-access-templates",
        "DRA-001",
        "resourceclaimtemplates",
        _no_admin_access("object.spec.spec.devices"),
        _ADMIN_ACCESS_MESSAGE,
        uses_params=False,
    ),
)
# The rules bound per tenant, to its namespaces.
TENANT_RULES: tuple[Rule, ...] = (*POD_RULES, *CLAIM_RULES)
KINDS = {
    "pods": ("", "v1", "Pod"),
    "resourceclaims": ("resource.k8s.io", "v1", "ResourceClaim"),
    "resourceclaimtemplates": ("resource.k8s.io", "v1", "ResourceClaimTemplate"),
    "nodes": ("", "v1", "Node"),
}

NODE_RULE = Rule(
    "no-tenant-node-patches",
    "K8S-003",
    "nodes",
    _NODE_PATCHES,
    "Tenant principals may not change node labels or taints (K8S-003).",
)

RULES: tuple[Rule, ...] = (*TENANT_RULES, NODE_RULE)


def exemption_condition(namespace: str, name: str, labels: dict[str, str]) -> str:
    """A CEL condition that is false for the objects an exemption covers (a VAP matchCondition
    or a Kyverno celPrecondition: the rule then does not judge them). A name matches the pod
    or the workload its generated name comes from (`<name>-...`)."""
    parts = []
    if namespace:
        parts.append(f"object.metadata.namespace == '{_escape(namespace)}'")
    if name:
        n = _escape(name)
        parts.append(f"(object.metadata.name == '{n}' || object.metadata.name.startsWith('{n}-'))")
    for key, value in sorted(labels.items()):
        k, v = _escape(key), _escape(value)
        parts.append(
            f"(has(object.metadata.labels) && '{k}' in object.metadata.labels"
            f" && object.metadata.labels['{k}'] == '{v}')"
        )
    return "!(" + " && ".join(parts or ["true"]) + ")"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")
