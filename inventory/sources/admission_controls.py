"""Which of the pod controls K8S-009 asks for an admission rule judges. PURE.

A policy that denies is not yet a policy that denies privileged pods: one requiring labels or
an approved registry blocks nothing K8S-009 is about, and one refusing privileged containers
still admits hostPID or a hostPath of /dev. Each rule is read for the controls it judges:
- Kyverno `validate.podSecurity` at baseline or restricted: all of them, less the controls its
  `exclude` lists (an exclusion by image or field is one a tenant can often meet);
- a Kyverno pattern, condition or CEL rule, or a ValidatingAdmissionPolicy's validations: the
  pod fields it names (`privileged`, `hostPID`, `hostIPC`, `hostNetwork`, `hostPath`,
  `capabilities` with `add`; the container fields only where `initContainers` are judged
  too); messages are not read;
- a Gatekeeper constraint: its kind (the gatekeeper-library's K8sPSP* templates, the Azure
  Policy add-on's K8sAzureV<n>* ones, and names like them), less what its parameters allow
  (allowedCapabilities `*`, a hostPath prefix over /dev, `hostNetwork: true` or Azure's
  `allowHostNetwork: true`, a `hostPath` volume type, any `exemptImages` or Azure's
  `excludedImages` / `excludedContainers`).
Naming a field is taken as judging it; a rule that blocks a control without naming it (an
allow-list of volume types) is not credited: K8S-009 then says partial, never a false pass.
"""

from __future__ import annotations

import re
from typing import Any

PRIVILEGED = "privileged"
HOST_PID = "hostPID"
HOST_IPC = "hostIPC"
HOST_NETWORK = "hostNetwork"
HOST_PATH = "hostPath"
CAPABILITIES = "capabilities"
# In the order of the checks they back: POD-001, POD-002 (three), POD-003, POD-004.
CONTROLS = (PRIVILEGED, HOST_PID, HOST_IPC, HOST_NETWORK, HOST_PATH, CAPABILITIES)
CONTROL_CHECKS = {
    PRIVILEGED: "POD-001",
    HOST_PID: "POD-002",
    HOST_IPC: "POD-002",
    HOST_NETWORK: "POD-002",
    HOST_PATH: "POD-003",
    CAPABILITIES: "POD-004",
}

# Pod Security Standards control names (as Kyverno's podSecurity.exclude writes them).
_PSS_CONTROLS = {
    "Privileged Containers": (PRIVILEGED,),
    "Host Namespaces": (HOST_PID, HOST_IPC, HOST_NETWORK),
    "HostPath Volumes": (HOST_PATH,),
    "Capabilities": (CAPABILITIES,),
}
PSS_ENFORCING = ("baseline", "restricted")
_NOT_READ = frozenset({"message", "messageExpression", "reason", "name"})
_ADD = re.compile(r"\badd\b")
# Parameters naming images or containers a constraint does not judge: the gatekeeper-library's
# `exemptImages`, the Azure Policy add-on's `excludedImages` and `excludedContainers` (a
# container's name and image are the tenant's to choose).
_EXEMPTING_PARAMETERS = ("exemptImages", "excludedImages", "excludedContainers")
# The Azure Policy add-on's "no privileged containers" templates (K8sAzureV1NoPrivilege,
# K8sAzureV2NoPrivilege): "noprivilege" lacks the "privileged" the gatekeeper-library's kind
# has, and K8sAzureV3NoPrivilegeEscalation (allowPrivilegeEscalation) is another control.
_AZURE_NO_PRIVILEGE = re.compile(r"noprivilege(?!escalation)")
_WIDE_CAPABILITIES = {"*", "SYS_ADMIN", "CAP_SYS_ADMIN", "ALL", "CAP_ALL"}
# Host paths whose mount hands over the node's devices, kernel or container runtime (POD-003).
_HOST_PATHS = (
    "/dev",
    "/proc",
    "/sys",
    "/run",
    "/var/run",
    "/var/lib/kubelet",
    "/var/lib/containerd",
    "/var/lib/docker",
    "/etc/kubernetes",
)


def _words(value: Any) -> list[str]:
    """Every key and string in a rule, messages and names left out."""
    if isinstance(value, dict):
        out = []
        for key, item in value.items():
            if key in _NOT_READ:
                continue
            out.append(str(key))
            out += _words(item)
        return out
    if isinstance(value, list):
        return [w for item in value for w in _words(item)]
    return [value] if isinstance(value, str) else []


def named_controls(rule: Any) -> tuple[str, ...]:
    """The controls whose pod fields a pattern, condition or CEL expression names. The
    container-level ones (privileged, capabilities) count only when init containers are
    judged too: a privileged init container runs on the node like any other."""
    text = "\n".join(_words(rule))
    found = {c for c in (HOST_PID, HOST_IPC, HOST_NETWORK, HOST_PATH) if c in text}
    every_container = "initContainers" in text
    if PRIVILEGED in text and every_container:
        found.add(PRIVILEGED)
    if CAPABILITIES in text and _ADD.search(text) and every_container:
        found.add(CAPABILITIES)
    return tuple(c for c in CONTROLS if c in found)


def kyverno_controls(validate: dict[str, Any]) -> tuple[str, ...]:
    pss = validate.get("podSecurity")
    if not isinstance(pss, dict):
        return named_controls(validate)
    level = pss.get("level")
    if level not in PSS_ENFORCING:
        return ()
    names = {str(e.get("controlName")) for e in _dicts(pss.get("exclude"))}
    excluded = {c for name in names for c in _PSS_CONTROLS.get(name, ())}
    if level == "restricted" and "Volume Types" not in names:
        excluded.discard(HOST_PATH)  # restricted also refuses hostPath as a volume type
    return tuple(c for c in CONTROLS if c not in excluded)


def pss_exempted(entries: list[dict[str, Any]]) -> tuple[str, ...]:
    """The controls a PolicyException's `podSecurity` entries lift. An entry allowing only
    some values of a field (`restrictedField` with `values`) lifts capabilities only when a
    wide one (SYS_ADMIN, ALL) is among them, privileged only when `true` is."""
    lifted: set[str] = set()
    for entry in entries:
        controls = _PSS_CONTROLS.get(str(entry.get("controlName")), ())
        values = entry.get("values")
        if entry.get("restrictedField") and isinstance(values, list):
            allowed = {str(v).upper() for v in values}
            if CAPABILITIES in controls and not allowed & _WIDE_CAPABILITIES:
                controls = tuple(c for c in controls if c != CAPABILITIES)
            if PRIVILEGED in controls and "TRUE" not in allowed:
                controls = tuple(c for c in controls if c != PRIVILEGED)
        lifted.update(controls)
    return tuple(c for c in CONTROLS if c in lifted)


def vap_controls(spec: dict[str, Any]) -> tuple[str, ...]:
    """A ValidatingAdmissionPolicy's validations (and the variables they use)."""
    validations = [v.get("expression") for v in _dicts(spec.get("validations"))]
    variables = [v.get("expression") for v in _dicts(spec.get("variables"))]
    return named_controls([e for e in validations + variables if isinstance(e, str)])


def gatekeeper_controls(kind: str, parameters: dict[str, Any]) -> tuple[str, ...]:
    if any(parameters.get(k) for k in _EXEMPTING_PARAMETERS):
        # Anyone may run an exempt image (nvcr.io/nvidia/* is where tenants' PyTorch images
        # come from too) with a command of their own, or name a container as excluded: the
        # constraint holds for nobody.
        return ()
    name = kind.lower()
    found: set[str] = set()
    if PRIVILEGED in name or _AZURE_NO_PRIVILEGE.search(name):
        found.add(PRIVILEGED)
    if "hostnamespace" in name:
        found |= {HOST_PID, HOST_IPC}
    if "hostnetwork" in name and not _allows_host_network(parameters):
        found.add(HOST_NETWORK)
    if ("hostfilesystem" in name or "hostpath" in name) and not _allows_host_paths(parameters):
        found.add(HOST_PATH)
    if "volumetypes" in name:
        volumes = {str(v) for v in parameters.get("volumes") or ()}
        if not volumes & {"*", HOST_PATH}:
            found.add(HOST_PATH)
    if "disallowedcapabilit" in name:
        # A deny-list (Azure's K8sAzureV3DisallowedCapabilities) refuses only what it names:
        # it holds when it names ALL, else every capability it leaves out can be added.
        denied = {str(c).upper() for c in parameters.get("disallowedCapabilities") or ()}
        if denied & {"ALL", "CAP_ALL", "*"}:
            found.add(CAPABILITIES)
    elif "capabilit" in name:
        allowed = {str(c).upper() for c in parameters.get("allowedCapabilities") or ()}
        if not allowed & _WIDE_CAPABILITIES:
            found.add(CAPABILITIES)
    return tuple(c for c in CONTROLS if c in found)


def _allows_host_network(parameters: dict[str, Any]) -> bool:
    """K8sPSPHostNetworkingPorts writes `hostNetwork`, the Azure add-on's
    K8sAzureV3HostNetworkingPorts `allowHostNetwork`; either true lets a pod share the
    node's network namespace (the ports bounds judge hostPorts only)."""
    return parameters.get("hostNetwork") is True or parameters.get("allowHostNetwork") is True


def _allows_host_paths(parameters: dict[str, Any]) -> bool:
    """K8sPSPHostFilesystem's allowedHostPaths: a prefix over a dangerous path (or the path
    itself, or one under /dev) lets a tenant mount it."""
    for entry in _dicts(parameters.get("allowedHostPaths")):
        prefix = str(entry.get("pathPrefix") or "").rstrip("/")
        if prefix == "" or prefix.startswith("/dev/"):
            return True
        if any(p == prefix or p.startswith(prefix + "/") for p in _HOST_PATHS):
            return True
    return False


def _dicts(raw: Any) -> list[dict[str, Any]]:
    return [r for r in raw if isinstance(r, dict)] if isinstance(raw, list) else []
