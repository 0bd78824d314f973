"""POD-*: how tenant pods are built and where they run (DESIGN §2, §5). Platform pods never
count.

hardening (POD-001 privileged, POD-002 host namespaces, POD-004 capabilities), host_paths
(POD-003, POD-005 /dev/nvidia-caps), resources (POD-006), images (POD-007), credentials
(POD-008), placement (POD-009), identity (POD-010), visible_devices (POD-011).
"""

from __future__ import annotations

from posture.rules.pod import (
    credentials,
    hardening,
    host_paths,
    identity,
    images,
    placement,
    resources,
    visible_devices,
)

__all__ = [
    "credentials",
    "hardening",
    "host_paths",
    "identity",
    "images",
    "placement",
    "resources",
    "visible_devices",
]
