"""POD-007 judges an image volume's reference (spec.volumes[].image, Kubernetes 1.31+: an OCI
image or artifact the kubelet pulls and mounts read-only) as it judges a container's image:
pinned by digest, from an approved registry, the volume named in the evidence."""

from __future__ import annotations

import dataclasses

import posture.rules  # noqa: F401  (registers the existing checks)
import posture.rules.pod  # noqa: F401
from inventory.snapshot import Pod
from inventory.snapshot.codec import from_dict, to_dict
from inventory.sources.pods import pod_from_object, pod_from_template
from posture.inputs import TenantInfo
from tests.posture.builders import container_names, inputs, run, tenant, trust_class

DIGEST = "sha256:" + "c" * 64
APPROVED = "registry.example.internal"
PINNED = f"{APPROVED}/vision/train@{DIGEST}"


def _class(registries: tuple[str, ...] = (APPROVED,)) -> TenantInfo:
    cls = dataclasses.replace(
        trust_class("internal"), approved_registries=registries, require_image_digest=True
    )
    return dataclasses.replace(tenant("vision", "internal"), trust_class=cls)


def _raw_pod(*volumes: dict, image: str = PINNED) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "imgvol", "namespace": "vision"},
        "spec": {
            "nodeName": "gpu-1",
            "containers": [{"name": "main", "image": image}],
            "volumes": [{"name": "scratch", "emptyDir": {}}, *volumes],
        },
        "status": {"phase": "Running"},
    }


def _image_volume(reference: str, name: str = "tokenizer") -> dict:
    return {"name": name, "image": {"reference": reference, "pullPolicy": "IfNotPresent"}}


def _pod007(raw: dict, who: TenantInfo | None = None):
    pod = pod_from_object(raw, "vision")
    return run("POD-007", inputs(pods=(pod,), tenants=(who or _class(),)))


def test_the_snapshot_keeps_an_image_volumes_reference():
    raw = _raw_pod(_image_volume("ghcr.io/vision-ml/tokenizer-artifacts:latest"))
    pod = pod_from_object(raw, "vision")
    volume = pod.volumes[1]
    assert (volume.kind, volume.image) == ("image", "ghcr.io/vision-ml/tokenizer-artifacts:latest")
    assert pod.volumes[0].image is None  # any other volume has none
    assert from_dict(Pod, to_dict(pod)) == pod  # stored and read back as the checks read it
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "train", "namespace": "vision"},
        "spec": {"template": {"spec": raw["spec"]}},
    }
    template = pod_from_template(deployment)
    assert template is not None and template.volumes[1].image == volume.image


def test_a_tag_only_image_volume_is_pod007_naming_the_volume():
    (draft,) = _pod007(_raw_pod(_image_volume("ghcr.io/vision-ml/tokenizer-artifacts:latest")))
    assert draft.evidence["containers"] == []  # the container's own image is fine
    (entry,) = draft.evidence["volumes"]
    assert entry["volume"] == "tokenizer"
    assert entry["field"] == "spec.volumes[1].image.reference"
    assert (entry["registry"], entry["tag"], entry["digest"]) == ("ghcr.io", "latest", None)
    assert entry["problems"] == [
        "registry ghcr.io is not approved for trust class internal",
        "not pinned by an @sha256: digest",
    ]
    assert draft.title.startswith(
        "Image volume tokenizer of Pod vision/imgvol uses "
        "ghcr.io/vision-ml/tokenizer-artifacts:latest: registry ghcr.io is not approved"
    )


def test_a_digest_pinned_image_volume_from_an_approved_registry_raises_nothing():
    assert _pod007(_raw_pod(_image_volume(f"{APPROVED}/vision/tokenizer@{DIGEST}"))) == []


def test_an_image_volume_is_judged_by_the_class_policy_as_a_container_image_is():
    pinned_elsewhere = _raw_pod(_image_volume(f"ghcr.io/vision-ml/tok@{DIGEST}"))
    assert _pod007(pinned_elsewhere, _class(registries=())) == []  # any registry approved
    (draft,) = _pod007(pinned_elsewhere)
    assert draft.evidence["volumes"][0]["problems"] == [
        "registry ghcr.io is not approved for trust class internal"
    ]


def test_a_container_and_an_image_volume_make_one_finding_of_the_workload():
    raw = _raw_pod(_image_volume("ghcr.io/a/b:1", "weights"), image=f"{APPROVED}/vision/train:2")
    (draft,) = _pod007(raw)
    assert container_names(draft) == ["main"]
    assert [v["volume"] for v in draft.evidence["volumes"]] == ["weights"]
    assert draft.title.startswith(
        "Container main and image volume weights of Pod vision/imgvol use "
        f"{APPROVED}/vision/train:2, ghcr.io/a/b:1: "
    )


def test_replicas_list_their_image_volume_once():
    raw = _raw_pod(_image_volume("ghcr.io/a/b:1"))
    pods = []
    for name in ("train-7f9c-a", "train-7f9c-b"):
        item = {**raw, "metadata": {"name": name, "namespace": "vision"}}
        pods.append(
            dataclasses.replace(
                pod_from_object(item, "vision"), owner_kind="Deployment", owner_name="train"
            )
        )
    (draft,) = run("POD-007", inputs(pods=tuple(pods), tenants=(_class(),)))
    assert [v["volume"] for v in draft.evidence["volumes"]] == ["tokenizer"]


def test_a_pod_without_image_volumes_says_nothing_of_volumes():
    (draft,) = _pod007(_raw_pod(image="busybox"))
    assert "volumes" not in draft.evidence
