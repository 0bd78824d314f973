"""Whether Kyverno honours a PolicyException, from its admission controller's flags. PURE.

Kyverno applies PolicyExceptions only when its admission controller runs with
`--enablePolicyException` (off by default in 1.9 and 1.10, on from 1.11; the Helm chart writes
the flag out from 1.13), and with `--exceptionNamespace=NS` only those created in NS (`*`: any
namespace). The flags are the admission controller pod's container args (image
`.../kyverno/kyverno`); a snapshot or sync without that pod leaves them unseen, and an
exception deployed is then taken as honoured, which the evidence says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from inventory.snapshot import Pod
from inventory.snapshot_admission import KYVERNO_EXCEPTION, AdmissionPolicy

_VERSION = re.compile(r":v?(\d+)\.(\d+)")
ASSUMED = (
    "exceptions are taken as honoured: no Kyverno admission controller pod was seen to tell "
    "its --enablePolicyException and --exceptionNamespace flags"
)


def _controllers(pods: Iterable[Pod]) -> list[tuple[str, tuple[str, ...], str]]:
    """(pod ref, args, image) of each Kyverno admission controller container."""
    found = []
    for pod in pods:
        for container in pod.containers:
            repository = container.image.split("@", 1)[0].rsplit(":", 1)[0]
            if repository.endswith("/kyverno/kyverno") and not container.init:
                found.append((f"{pod.namespace}/{pod.name}", container.args, container.image))
    return found


def _flag(args: Sequence[str], name: str) -> str | None:
    """The value of `--name=value` (or `-name`), "true" for the bare flag, None if absent."""
    value = None
    for arg in args:
        key, sep, given = arg.lstrip("-").partition("=")
        if key == name:
            value = given if sep else "true"
    return value


def honoured(
    pods: Iterable[Pod], policies: Sequence[AdmissionPolicy]
) -> tuple[list[AdmissionPolicy], list[dict[str, str]], str]:
    """The admission policies without the exceptions Kyverno ignores, those ignored (each
    {"exception", "why"}), and what the evidence says of the rest."""
    exceptions = [p for p in policies if p.engine == KYVERNO_EXCEPTION]
    controllers = _controllers(pods)
    if not exceptions or not controllers:
        return list(policies), [], ASSUMED if exceptions else ""
    ref, args, image = controllers[0]
    enabled = _flag(args, "enablePolicyException")
    version = _VERSION.search(image)
    how = f"{ref} runs with --enablePolicyException={enabled}"
    if enabled is None and version and (int(version[1]), int(version[2])) < (1, 11):
        how = f"{ref} runs Kyverno {version[1]}.{version[2]}, where exceptions are off by default"
        enabled = "false"
    if enabled is not None and enabled.lower() != "true":
        ignored = [{"exception": p.ref, "why": how} for p in exceptions]
        return [p for p in policies if p.engine != KYVERNO_EXCEPTION], ignored, ""
    where = _flag(args, "exceptionNamespace") or "*"
    ignored = [
        {"exception": p.ref, "why": f"{ref} honours exceptions only in namespace {where}"}
        for p in exceptions
        if where != "*" and p.namespace != where
    ]
    gone = {d["exception"] for d in ignored}
    kept = [p for p in policies if p.ref not in gone or p.engine != KYVERNO_EXCEPTION]
    flag = "with --enablePolicyException" if enabled else "without --enablePolicyException "
    flag += "" if enabled else "(on by default from Kyverno 1.11)"
    said = f"exceptions are honoured: {ref} runs {flag}" + (
        f" and --exceptionNamespace={where}" if where != "*" else ""
    )
    return kept, ignored, said
