"""POD-006: GPU resource requests that differ from their limits (DESIGN §2, §5)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.snapshot import Container, Pod
from inventory.snapshot.accelerators import is_judged_accelerator
from inventory.snapshot.quantity import parse_quantity
from posture.inputs import PostureInputs
from posture.rules.common import containers_with_paths, hardening_pods
from posture.rules.pod.container_findings import (
    ContainerHit,
    PodHits,
    container_drafts,
    containers_named,
    listed,
)
from posture.rules.registry import FindingDraft, check


def _same_quantity(a: str, b: str) -> bool:
    """Equal as quantities ("1", " 01" and "1000m" are one GPU; "3k" is 3000 MiB); text that
    is no quantity compares as written (the API server would refuse it anyway)."""
    left, right = parse_quantity(a), parse_quantity(b)
    if left is None or right is None:
        return a.strip() == b.strip()
    return left == right


def gpu_request_mismatches(container: Container, path: str) -> list[dict[str, Any]]:
    """Each GPU request (nvidia.com/*, or another vendor's accelerator: amd.com/gpu, ...) with
    no limit or a different limit. A limit with no request is fine: requests of extended
    resources default to their limits."""
    requests, limits = gpu_requests(container), gpu_limits(container)
    found = []
    for name, requested in sorted(requests.items()):
        limit = limits.get(name)
        if limit is not None and _same_quantity(requested, limit):
            continue
        found.append(
            {
                "resource": name,
                "request": requested,
                "limit": limit,
                "problem": "request without a limit" if limit is None else "request != limit",
                "field": f'{path}.resources.requests["{name}"]',
            }
        )
    return found


def gpu_requests(container: Container) -> dict[str, str]:
    """The container's GPU requests as written, whatever the vendor (is_judged_accelerator)."""
    others = container.accelerator_requests
    return {
        **container.gpu_requests,
        **{k: v for k, v in others.items() if is_judged_accelerator(k)},
    }


def gpu_limits(container: Container) -> dict[str, str]:
    """The container's GPU limits as written, whatever the vendor (is_judged_accelerator)."""
    others = container.accelerator_limits
    return {**container.gpu_limits, **{k: v for k, v in others.items() if is_judged_accelerator(k)}}


@check(
    id="POD-006",
    title="GPU resource request differs from its limit, or has no limit",
    severity="medium",
    scope="tenant",
    rationale=(
        "GPUs, time-sliced replicas and MIG devices are extended resources: the scheduler "
        "and ResourceQuota count `requests`, the device plugin allocates by `limits`, and "
        "the API server rejects a pod whose extended-resource request differs from its limit "
        "or lacks one, whatever the vendor (`amd.com/gpu`, `habana.ai/gaudi` as much as "
        "`nvidia.com/gpu`). A manifest or snapshot that carries such a mismatch was either never "
        "admitted (so what runs differs from what the tenant declared) or bypassed admission; "
        "either way quotas and the approved GPU allocation stop describing what the workload "
        "gets."
    ),
    remediation=(
        "In the container at the path in the evidence, set `resources.limits` for each "
        "GPU resource listed (e.g. `nvidia.com/gpu: 1`, `nvidia.com/mig-1g.10gb: 1`, "
        "`amd.com/gpu: 1`) and either remove the matching `resources.requests` entry (it "
        "defaults to the limit) or make it equal. Validate manifests before deploying with "
        "`kubectl apply --dry-run=server -f <manifest>`, which runs the same admission checks."
    ),
    mappings=("SP800-53:CM-6",),
)
def gpu_request_limit_mismatch(inputs: PostureInputs) -> Iterator[FindingDraft]:
    # A template asks for the GPUs its pods will: judged with no pod running too.
    found = (PodHits(pod, tenant, _mismatch_hits(pod)) for pod, tenant in hardening_pods(inputs))
    yield from container_drafts("POD-006", inputs, found, title=_mismatch_title)


def _mismatch_hits(pod: Pod) -> list[ContainerHit]:
    hits = []
    for container, path in containers_with_paths(pod):
        mismatches = gpu_request_mismatches(container, path)
        if not mismatches:
            continue
        evidence = {
            "container": container.name,
            "init_container": container.init,
            "mismatches": mismatches,
            "requests": gpu_requests(container),
            "limits": gpu_limits(container),
        }
        hits.append(ContainerHit(container, evidence))
    return hits


def _mismatch_title(ref: str, entries: list[dict[str, Any]], _: list[ContainerHit]) -> str:
    names = listed((m["resource"] for e in entries for m in e["mismatches"]), shown=20)
    return f"{containers_named(entries)} of {ref}: GPU request differs from limit ({names})"
