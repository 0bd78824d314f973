"""POD-007: images from an unapproved registry or not pinned by digest (DESIGN §2, §5): every
container's image, and every image volume's reference (an OCI image or artifact the kubelet
pulls from a registry as it pulls a container's image, Kubernetes 1.31+)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from inventory.snapshot import Container, Pod, Volume
from posture.inputs import PostureInputs, TenantInfo, TrustClassInfo
from posture.rules.common import containers_with_paths, hardening_pods
from posture.rules.pod.container_findings import (
    ContainerHit,
    PodHits,
    agree,
    container_drafts,
    containers_named,
    listed,
)
from posture.rules.pod.injectors import injected_containers
from posture.rules.registry import FindingDraft, check

DOCKER_HUB = "docker.io"
# Docker Hub's other names: the daemon rewrites them to docker.io.
DOCKER_HUB_ALIASES = ("index.docker.io", "registry-1.docker.io", "registry.hub.docker.com")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class ImageRef:
    registry: str  # host[:port], lower case; docker.io when the reference names none
    repository: str  # registry/path, e.g. "docker.io/library/busybox"
    tag: str | None
    digest: str | None  # "sha256:..." as written after "@"


def _registry_name(host: str) -> str:
    host = host.lower()
    return DOCKER_HUB if host in DOCKER_HUB_ALIASES else host


def parse_image(image: str) -> ImageRef:
    """Split a reference as the container runtime does: the first path component is a
    registry host only when it has a dot or a port, or is `localhost`; otherwise the image is
    on Docker Hub, and a single-component name lives under `library/`."""
    name, _, digest = image.strip().partition("@")
    tag = None
    last = name.rfind("/")
    colon = name.rfind(":")
    if colon > last:  # a colon before the last slash is a registry port, not a tag
        name, tag = name[:colon], name[colon + 1 :]
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        registry, path = _registry_name(first), rest
    else:
        registry, path = DOCKER_HUB, name if "/" in name else f"library/{name}"
    return ImageRef(registry, f"{registry}/{path}".lower(), tag, digest or None)


def _approved_entry(entry: str) -> str:
    entry = entry.strip().lower().removeprefix("https://").removeprefix("http://").rstrip("/")
    host, sep, rest = entry.partition("/")
    return _registry_name(host) + sep + rest


def approved_by(ref: ImageRef, approved: tuple[str, ...]) -> str | None:
    """The approved entry (a registry host, or a host/path prefix) the image falls under.
    Hosts compare with their port: registry:5000 is a different endpoint from registry."""
    for raw in approved:
        entry = _approved_entry(raw)
        if entry and (ref.repository == entry or ref.repository.startswith(entry + "/")):
            return raw
    return None


def image_problems(ref: ImageRef, cls: TrustClassInfo) -> list[str]:
    problems = []
    if cls.approved_registries and approved_by(ref, cls.approved_registries) is None:
        problems.append(f"registry {ref.registry} is not approved for trust class {cls.slug}")
    if cls.require_image_digest and not (ref.digest and _DIGEST.match(ref.digest)):
        problems.append("not pinned by an @sha256: digest")
    return problems


@check(
    id="POD-007",
    title="Image not from an approved registry, or not pinned by digest",
    severity="medium",
    scope="tenant",
    rationale=(
        "A tenant's trust class names the registries its images may come from and whether "
        "they must be pinned by digest. An image from elsewhere has not passed the scanning, "
        "signing and provenance controls of the approved registries, and runs next to GPUs "
        "that hold other tenants' models and data. A tag is mutable: whoever can push to the "
        "repository can change what runs on the next pull, so only a `@sha256:` digest fixes "
        "the code that was reviewed. An image volume (`spec.volumes[].image`) is pulled the "
        "same way and judged the same. Out of the box every tenant class (all but `platform`) "
        "requires a digest and approves any registry: the organisation's registries are not "
        "known until they are listed on the class."
    ),
    remediation=(
        "Where the evidence lists approved registries, mirror the image into one of them "
        "(e.g. `crane copy <image> <approved-registry>/<path>:<tag>`). Reference it by digest "
        "at the path shown (a container's `image`, or an image volume's `image.reference`): "
        "`<registry>/<path>@sha256:<digest>` (`crane digest <image>` prints it). Enforce both "
        "with an admission policy on the tenant namespace (Kyverno `verifyImages` / a "
        "ValidatingAdmissionPolicy on `spec.containers[*].image`, "
        "`spec.initContainers[*].image` and `spec.volumes[*].image.reference`). List the approved "
        "registries on each trust class (admin, Trust classes) so images from elsewhere are "
        "reported too."
    ),
    mappings=("SP800-53:SR-3", "SP800-53:CM-14"),
)
def unapproved_image(inputs: PostureInputs) -> Iterator[FindingDraft]:
    found = (_image_hits(pod, tenant) for pod, tenant in hardening_pods(inputs))
    yield from container_drafts("POD-007", inputs, found, title=_image_title)


def _image_hits(pod: Pod, tenant: TenantInfo) -> PodHits:
    cls = tenant.trust_class
    hits = []
    if cls.approved_registries or cls.require_image_digest:
        injected = injected_containers(pod)
        for container, path in containers_with_paths(pod):
            ref = parse_image(container.image)
            problems = image_problems(ref, cls)
            if problems:
                entry = _image_entry(container, path, ref, problems)
                if container.name in injected:
                    entry["injected_by"] = injected[container.name]
                hits.append(ContainerHit(container, entry))
    policy = {
        "approved_registries": list(cls.approved_registries),
        "require_image_digest": cls.require_image_digest,
    }
    return PodHits(pod, tenant, hits, evidence=policy, volumes=_volume_entries(pod, cls))


def _volume_entries(pod: Pod, cls: TrustClassInfo) -> list[dict[str, Any]] | None:
    """The pod's image volumes whose reference breaks the class's image policy; None when the
    pod has no image volume (its evidence then says nothing of volumes). A volume with no
    reference pulls nothing (the kubelet cannot start the pod): nothing to judge."""
    images = [(i, v) for i, v in enumerate(pod.volumes) if v.image]
    if not images:
        return None
    found = []
    for index, volume in images:
        ref = parse_image(str(volume.image))
        if problems := image_problems(ref, cls):
            found.append(_volume_entry(index, volume, ref, problems))
    return found


def _volume_entry(index: int, volume: Volume, ref: ImageRef, problems: list[str]) -> dict[str, Any]:
    return {
        "volume": volume.name,
        "field": f"spec.volumes[{index}].image.reference",
        "image": volume.image,
        "registry": ref.registry,
        "repository": ref.repository,
        "tag": ref.tag,
        "digest": ref.digest,
        "problems": problems,
    }


def _image_entry(
    container: Container, path: str, ref: ImageRef, problems: list[str]
) -> dict[str, Any]:
    return {
        "container": container.name,
        "init_container": container.init,
        "field": f"{path}.image",
        "image": container.image,
        "registry": ref.registry,
        "repository": ref.repository,
        "tag": ref.tag,
        "digest": ref.digest,
        "problems": problems,
    }


def _image_title(ref: str, entries: list[dict[str, Any]], _: list[ContainerHit]) -> str:
    images = list(dict.fromkeys(str(e["image"]) for e in entries))
    runs = ", ".join(images) if len(images) <= 2 else f"{len(images)} images"
    problems = "; ".join(dict.fromkeys(p for e in entries for p in e["problems"]))
    containers = [e for e in entries if "volume" not in e]
    volumes = [str(e["volume"]) for e in entries if "volume" in e]
    named = [containers_named(containers)] if containers else []
    if volumes:
        word = "image volume" if len(volumes) == 1 else "image volumes"
        named.append(f"{word} {listed(volumes)}")
    who = " and ".join(named)
    verb = agree(entries, "runs" if not volumes else "uses", "run" if not volumes else "use")
    return f"{who[0].upper()}{who[1:]} of {ref} {verb} {runs}: {problems}"
