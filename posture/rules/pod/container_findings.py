"""One finding per check and workload for the checks that judge each container: POD-001,
POD-004, POD-006, POD-007, POD-008, POD-011. PURE.

A finding's identity is (check, subject) (DESIGN §5). The containers of one workload that a
check flags are one cause, closed by one change to the workload, so they make one finding, not
one per container. For example, a RayCluster's head and workers are one finding, and so is the
init container a controller injects with the user's image. Each check says what it found in
each container of a pod (ContainerHit). This module files the hits:

- the evidence's `containers` lists each container concerned, as the check describes it: its
  name, whether it is an init container, its image, and the fields and values. The replicas of
  a workload join their lists in registry.merge_drafts, one entry per container name;
- the title names the workload and its container, or "Containers a, b" when there are
  several. It names every container concerned in any pod of the workload, so every pod's draft
  carries the same title even when pods of two rollout versions differ;
- the severity is the worst of its containers' (POD-004 rates each capability, POD-011 rates a
  latent access low);
- a debug container (`kubectl debug`) is its pod's own finding, apart from the workload's
  (subjects.container_subject);
- what a check finds in the pod's own volumes (POD-007's image volumes, pulled like a
  container's image) is the workload's, listed in the evidence's `volumes`;
- a container an OpenKruise SidecarSet injected is still filed under the workload whose pods
  run it (its tenant is affected), its entry saying `injected_by` "SidecarSet <name>": the
  SidecarSet is where it is changed (posture.rules.pod.injectors, posture.actions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from inventory.snapshot import Container, Pod
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.pod.injectors import sidecarset_containers
from posture.rules.registry import FindingDraft, worst_severity
from posture.rules.subjects import container_subject, workload_draft

# Names a title shows before it counts the rest (titles stay within registry.TITLE_MAX).
NAMES_SHOWN = 5


@dataclass(frozen=True)
class ContainerHit:
    """What a check found in one container of one pod."""

    container: Container
    evidence: dict[str, Any]  # the container's entry in the evidence's `containers`
    severity: str = ""  # "": the check's own
    # What the container does on this pod's node (POD-011): kept in the pod's entry of `pods`.
    pod_facts: dict[str, Any] = field(default_factory=dict)
    note: str = ""  # what the title adds for it on this pod's node (POD-011)


@dataclass(frozen=True)
class PodHits:
    """The containers one check flags in one pod, and what holds for the whole pod."""

    pod: Pod
    tenant: TenantInfo
    hits: list[ContainerHit]
    evidence: dict[str, Any] = field(default_factory=dict)  # e.g. its user namespace
    pod_facts: dict[str, Any] = field(default_factory=dict)  # its node's (POD-011)
    # What the check found in the pod's own volumes (POD-007's image volumes), filed under the
    # pod's workload in the evidence's `volumes`: None when the check reads no volume of the
    # pod, a list (maybe empty) when it does, so the replicas of a workload carry the same keys.
    volumes: list[dict[str, Any]] | None = None


# (the subject's ref, the entries of every container (and volume, for a check that reads
# volumes: its entry has `volume`) concerned in the subject's pods, this pod's hits) -> the title.
Title = Callable[[str, list[dict[str, Any]], list[ContainerHit]], str]


def container_drafts(
    check_id: str, inputs: PostureInputs, found: Iterable[PodHits], *, title: Title
) -> Iterator[FindingDraft]:
    """One draft per pod and subject, listing the pod's containers concerned. The pods of one
    workload then merge into one finding (registry.merge_drafts). Every pod is read before the
    first draft, so each title names all of its subject's containers."""
    parts: list[tuple[PodHits, str, list[ContainerHit], list[dict[str, Any]] | None]] = []
    # subject -> ("container" or "volume", name) -> entry
    entries: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
    for pod_hits in map(_injected_marked, found):
        workload = inputs.workload_of(pod_hits.pod).ref() if pod_hits.volumes is not None else ""
        groups = _by_subject(inputs, pod_hits)
        if pod_hits.volumes:
            groups.setdefault(workload, [])
        for subject, hits in groups.items():
            volumes = pod_hits.volumes if subject == workload else None
            parts.append((pod_hits, subject, hits, volumes))
            named = entries.setdefault(subject, {})
            for hit in hits:
                named.setdefault(("container", hit.container.name), hit.evidence)
            for volume in volumes or ():
                named.setdefault(("volume", str(volume["volume"])), volume)
    for pod_hits, subject, hits, volumes in parts:
        evidence = {**pod_hits.evidence, "containers": [hit.evidence for hit in hits]}
        if volumes is not None:
            evidence["volumes"] = volumes
        yield workload_draft(
            check_id,
            inputs,
            pod_hits.pod,
            pod_hits.tenant,
            evidence,
            title=title(subject, list(entries[subject].values()), hits),
            severity=worst_severity(hit.severity for hit in hits),
            pod_facts=_pod_facts(pod_hits, hits),
        )


def _injected_marked(pod_hits: PodHits) -> PodHits:
    """The hits, each container a SidecarSet injected saying so (`injected_by`), unless the
    check said who injected it already (POD-007 names a mesh's)."""
    injected = sidecarset_containers(pod_hits.pod)
    if not injected:
        return pod_hits
    hits = [
        replace(hit, evidence={**hit.evidence, "injected_by": injected[hit.container.name]})
        if hit.container.name in injected and "injected_by" not in hit.evidence
        else hit
        for hit in pod_hits.hits
    ]
    return replace(pod_hits, hits=hits)


def _by_subject(inputs: PostureInputs, pod_hits: PodHits) -> dict[str, list[ContainerHit]]:
    """The pod's hits by the ref of the subject each is filed under."""
    groups: dict[str, list[ContainerHit]] = {}
    for hit in pod_hits.hits:
        subject = container_subject(inputs, pod_hits.pod, hit.container).ref()
        groups.setdefault(subject, []).append(hit)
    return groups


def _pod_facts(pod_hits: PodHits, hits: list[ContainerHit]) -> dict[str, Any]:
    """The pod's entry in `pods`: its node's facts, then what each container does there."""
    per_container = [{"container": h.container.name, **h.pod_facts} for h in hits if h.pod_facts]
    if not per_container:
        return dict(pod_hits.pod_facts)
    return {**pod_hits.pod_facts, "containers": per_container}


# --- titles --------------------------------------------------------------------------------


def containers_named(entries: list[dict[str, Any]]) -> str:
    """ "Container app", or "Containers app, sidecar" (the rest counted past NAMES_SHOWN)."""
    names = [str(entry["container"]) for entry in entries]
    if len(names) == 1:
        return f"Container {names[0]}"
    return f"Containers {listed(names)}"


def agree(entries: list[dict[str, Any]], one: str, several: str) -> str:
    """The verb for the containers named: "is" for one, "are" for several."""
    return one if len(entries) == 1 else several


def listed(values: Iterable[str], shown: int = NAMES_SHOWN) -> str:
    """Distinct values in their order, joined; those past `shown` counted."""
    unique = list(dict.fromkeys(values))
    more = len(unique) - shown
    return ", ".join(unique[:shown]) + (f" and {more} more" if more > 0 else "")
