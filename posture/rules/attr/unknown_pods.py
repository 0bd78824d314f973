"""ATTR-002's GPUs whose samples name a pod the last inventory does not list (telemetry.facts,
telemetry.exporter_labels.unknown_pod_labels): whose usage it is cannot be verified."""

from __future__ import annotations

from collections.abc import Iterator

from posture.inputs import PostureInputs
from posture.rules.registry import MEMBERS_SHOWN, FindingDraft
from posture.rules.subjects import node_draft, node_named
from telemetry.exporter_labels import UnknownPodLabel


def unknown_pod_drafts(inputs: PostureInputs) -> Iterator[FindingDraft]:
    """One finding per node. Not ATTR-001: a pod created since the sync looks the same, and
    the kubelet gave it the GPU; its usage is booked as the label says, at confidence none
    (telemetry.attribution), since nothing checked it."""
    by_node: dict[str, list[UnknownPodLabel]] = {}
    for label in inputs.telemetry.unknown_pod_labels:
        by_node.setdefault(label.node, []).append(label)
    for name, labels in sorted(by_node.items()):
        node = node_named(inputs, name)
        pods = sorted({lab.pod for lab in labels})
        tenants = {
            t.slug: t
            for pod in pods
            if (t := inputs.tenant_of_namespace(pod.split("/", 1)[0])) is not None
        }
        evidence = {
            "node": name,
            "gpus": [
                {
                    "gpu_uuid": lab.uuid,
                    "mig_instance": lab.gi_id or None,
                    "pod": lab.pod,
                    "first_sample": lab.first.isoformat(),
                    "last_sample": lab.last.isoformat(),
                }
                for lab in labels[:MEMBERS_SHOWN]
            ],
            "pods_in_inventory": False,
            "attribution": "by the exporter's label alone: the pod is not in the last sync "
            "(created since, or the label is wrong), so nothing confirms whose usage it is: "
            "booked to that pod's tenant at confidence none, never exact",
            "hijack_detection": "the GPU is taken as held (a pod created since the sync "
            "looks the same); sync the cluster again: if the pod is still not listed, the "
            "label is wrong and the GPU is judged as one no pod holds",
        }
        gpus = sorted(
            {lab.uuid + (f" MIG instance {lab.gi_id}" if lab.gi_id else "") for lab in labels}
        )
        title = (
            f"GPU {', '.join(gpus[:3])}{' and more' if len(gpus) > 3 else ''} on {name} "
            f"labelled with pod {', '.join(pods[:3])}{' and more' if len(pods) > 3 else ''}, "
            "not in the last sync (created since, or the label is wrong): attribution unverified"
        )
        yield node_draft(
            "ATTR-002",
            node,
            inputs=inputs,
            tenants=[tenants[s] for s in sorted(tenants)],
            evidence=evidence,
            key="unknown-pod",
            title=title,
        )
