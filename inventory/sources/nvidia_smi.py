"""Parse the XML printed by `nvidia-smi -q -x` into plain, frozen facts about a host's GPUs.

Pure: no Django, no network, no subprocess. The caller runs nvidia-smi (or reads a file someone
uploaded) and hands the bytes here. The input is untrusted, so it is parsed only with defusedxml:
entity declarations (billion laughs, external entities) are refused, while the ordinary
`<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_vXX.dtd">` line real output carries is accepted
(expat never fetches that DTD).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException, EntitiesForbidden
from defusedxml.ElementTree import fromstring

MAX_INPUT_BYTES = 5 * 1024 * 1024
ROOT_TAG = "nvidia_smi_log"

# How nvidia-smi says "no value": the bracketed forms come from newer drivers, "Unknown Error"
# from a GPU that has fallen off the bus. None of them is a fact worth recording.
_NO_VALUE = frozenset(
    {
        "",
        "N/A",
        "[N/A]",
        "Not Supported",
        "[Not Supported]",
        "Unknown Error",
        "[Unknown Error]",
    }
)
_MIB = re.compile(r"(\d+)\s*MiB")
_HEX = re.compile(r"[0-9A-Fa-f]+")


class NvidiaSmiError(ValueError):
    """The input is not usable `nvidia-smi -q -x` output; the message says what to do."""


@dataclass(frozen=True, slots=True)
class MigDeviceFacts:
    gpu_instance_id: int | None
    compute_instance_id: int | None
    # nvidia-smi -q -x does not print a profile name today; read it should a driver add one.
    profile_name: str | None
    memory_total_mib: int | None


@dataclass(frozen=True, slots=True)
class GpuFacts:
    pci_bus_id: str
    product_name: str | None
    product_brand: str | None
    product_architecture: str | None
    uuid: str | None
    serial: str | None
    vbios_version: str | None
    mig_mode_current: str | None
    mig_mode_pending: str | None
    memory_total_mib: int | None
    mig_devices: tuple[MigDeviceFacts, ...]


@dataclass(frozen=True, slots=True)
class HostGpuFacts:
    driver_version: str | None
    cuda_version: str | None
    timestamp: str | None
    gpus: tuple[GpuFacts, ...]


def parse_nvidia_smi(xml: bytes | str) -> HostGpuFacts:
    """The facts in one `nvidia-smi -q -x` document; NvidiaSmiError when it is not one."""
    root = _parse_root(xml)
    gpu_elements = root.findall("gpu")
    if not gpu_elements:
        raise NvidiaSmiError(
            "no <gpu> elements in the nvidia-smi output: the driver sees no GPU on this host "
            "(check `nvidia-smi -L` and that the driver is loaded)"
        )
    return HostGpuFacts(
        driver_version=_text(root, "driver_version"),
        cuda_version=_text(root, "cuda_version"),
        timestamp=_text(root, "timestamp"),
        gpus=tuple(_gpu(element, number) for number, element in enumerate(gpu_elements)),
    )


def summarise(facts: HostGpuFacts) -> dict[str, Any]:
    """What a node record needs from the host's GPU facts."""
    versions = sorted({g.vbios_version for g in facts.gpus if g.vbios_version}, key=_version_key)
    currents = [g.mig_mode_current for g in facts.gpus]
    return {
        "driver_version": facts.driver_version,
        "cuda_driver_version": facts.cuda_version,
        # The oldest firmware is the one that bounds the host's exposure to VBIOS advisories.
        "firmware_version": versions[0] if versions else None,
        "firmware_versions": versions,
        "gpu_model": facts.gpus[0].product_name if facts.gpus else None,
        "gpu_count": len(facts.gpus),
        "mig_enabled": "Enabled" in currents,
        "gpu_uuids": [g.uuid for g in facts.gpus if g.uuid],
        "mig_pending_change": any(_mig_change_pending(g) for g in facts.gpus),
    }


# --- parsing -------------------------------------------------------------------------------


def _parse_root(xml: bytes | str) -> Element:
    if not isinstance(xml, bytes | str):
        raise NvidiaSmiError(f"expected the bytes or text of nvidia-smi output, got {type(xml)}")
    _check_size(xml)
    if not xml.strip():
        raise NvidiaSmiError("empty input: expected the output of `nvidia-smi -q -x`")
    try:
        # forbid_dtd stays False: real output names its DTD. Entities stay forbidden (default).
        root = fromstring(xml, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except EntitiesForbidden as exc:
        raise NvidiaSmiError(
            f"XML entities are not allowed (entity {exc.name!r} is declared); "
            "nvidia-smi -q -x output never declares any"
        ) from exc
    except DefusedXmlException as exc:
        raise NvidiaSmiError(f"refused unsafe XML ({exc}); nvidia-smi output has none") from exc
    except ParseError as exc:
        raise NvidiaSmiError(
            f"not XML ({exc}): run `nvidia-smi -q -x` (with -x), not `nvidia-smi -q`"
        ) from exc
    if root.tag != ROOT_TAG:
        raise NvidiaSmiError(
            f"not nvidia-smi -q -x output: root element is <{root.tag}>, expected <{ROOT_TAG}>"
        )
    return root


def _check_size(xml: bytes | str) -> None:
    # A str has at most as many characters as UTF-8 bytes: only encode when it could be close.
    size = len(xml)
    if isinstance(xml, str) and size <= MAX_INPUT_BYTES:
        size = len(xml.encode("utf-8", errors="replace"))
    if size > MAX_INPUT_BYTES:
        raise NvidiaSmiError(
            f"input is {size / (1024 * 1024):.1f} MB, over the 5 MB limit for nvidia-smi -q -x "
            "output; is this the right file?"
        )


def _gpu(element: Element, number: int) -> GpuFacts:
    return GpuFacts(
        pci_bus_id=_pci_bus_id(element, number),
        product_name=_text(element, "product_name"),
        product_brand=_text(element, "product_brand"),
        product_architecture=_text(element, "product_architecture"),
        uuid=_text(element, "uuid"),
        serial=_text(element, "serial"),
        vbios_version=_text(element, "vbios_version"),
        mig_mode_current=_text(element, "mig_mode/current_mig"),
        mig_mode_pending=_text(element, "mig_mode/pending_mig"),
        memory_total_mib=_mib(_text(element, "fb_memory_usage/total")),
        # Direct children only: <processes> also holds gpu_instance_id elements, which are not
        # MIG devices. With MIG off, <mig_devices> holds just the text "None".
        mig_devices=tuple(_mig_device(d) for d in element.findall("mig_devices/mig_device")),
    )


def _pci_bus_id(element: Element, number: int) -> str:
    # The id attribute is the bus id; <pci><pci_bus_id> repeats it, so use it as a fallback.
    bus_id = _clean(element.get("id")) or _text(element, "pci/pci_bus_id")
    if bus_id is None:
        raise NvidiaSmiError(
            f"<gpu> number {number} has no id attribute nor <pci><pci_bus_id>: "
            "the output is truncated or edited; capture it again with `nvidia-smi -q -x`"
        )
    return bus_id


def _mig_device(element: Element) -> MigDeviceFacts:
    return MigDeviceFacts(
        gpu_instance_id=_int(_text(element, "gpu_instance_id")),
        compute_instance_id=_int(_text(element, "compute_instance_id")),
        profile_name=_text(element, "profile_name"),
        memory_total_mib=_mib(_text(element, "fb_memory_usage/total")),
    )


# --- values --------------------------------------------------------------------------------


def _text(element: Element, path: str) -> str | None:
    """The stripped text at a child path, None when absent or one of nvidia-smi's no-values."""
    found = element.find(path)
    return None if found is None else _clean(found.text)


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return None if value in _NO_VALUE else value


def _int(value: str | None) -> int | None:
    # Tolerant: an unexpected value loses one fact instead of the whole host.
    return int(value) if value is not None and value.isdecimal() else None


def _mib(value: str | None) -> int | None:
    match = _MIB.fullmatch(value) if value is not None else None
    return int(match.group(1)) if match else None


def _version_key(version: str) -> tuple[tuple[tuple[int, int | str], ...], str]:
    """Component-wise numeric order for VBIOS versions such as 96.00.99.00.01.

    Components are read as hex: VBIOS versions use hex digits (90.04.3B.00.01), and for all-digit
    components hex and decimal order agree. Anything else sorts after numbers, as text.
    """
    # The text last breaks ties (96.0.99 vs 96.00.99), so the order never depends on set order.
    return tuple(_component_key(part) for part in version.split(".")), version


def _component_key(part: str) -> tuple[int, int | str]:
    return (0, int(part, 16)) if _HEX.fullmatch(part) else (1, part)


def _mig_change_pending(gpu: GpuFacts) -> bool:
    # Unknown on either side is not evidence of a pending change.
    current, pending = gpu.mig_mode_current, gpu.mig_mode_pending
    return current is not None and pending is not None and current != pending
