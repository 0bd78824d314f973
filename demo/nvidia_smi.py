"""`nvidia-smi -q -x` documents for some demo nodes (our own, invented serials and UUIDs)."""

from __future__ import annotations

import hashlib

HOSTS = {
    # node: (product, driver, CUDA, VBIOS, GPUs, MIG on)
    "pe-h100-01": ("NVIDIA H100 80GB HBM3", "550.90.07", "12.4", "96.00.99.00.01", 8, True),
    "pe-h100-02": ("NVIDIA H100 80GB HBM3", "550.90.07", "12.4", "96.00.99.00.01", 8, True),
    "pe-a100-01": ("NVIDIA A100-SXM4-80GB", "550.90.07", "12.4", "92.00.45.00.06", 8, True),
    "pe-a100-02": ("NVIDIA A100-SXM4-80GB", "550.90.07", "12.4", "92.00.36.00.02", 8, True),
}


def _digest(node: str, index: int) -> str:
    return hashlib.sha256(f"{node}/{index}".encode()).hexdigest()


def _uuid(node: str, index: int) -> str:
    d = _digest(node, index)
    return f"GPU-{d[:8]}-{d[8:12]}-{d[12:16]}-{d[16:20]}-{d[20:32]}"


def _gpu(node: str, index: int, product: str, vbios: str, mig: bool) -> str:
    mode = "Enabled" if mig else "Disabled"
    return (
        f'  <gpu id="00000000:{0x18 + index * 0x10:02X}:00.0">\n'
        f"    <product_name>{product}</product_name>\n"
        "    <product_brand>NVIDIA</product_brand>\n"
        f"    <uuid>{_uuid(node, index)}</uuid>\n"
        f"    <serial>16523{int(_digest(node, index)[32:40], 16) % 10**8:08d}</serial>\n"
        f"    <vbios_version>{vbios}</vbios_version>\n"
        f"    <mig_mode><current_mig>{mode}</current_mig>"
        f"<pending_mig>{mode}</pending_mig></mig_mode>\n"
        "  </gpu>\n"
    )


def nvidia_smi_xml(node: str) -> bytes:
    product, driver, cuda, vbios, count, mig = HOSTS[node]
    gpus = "".join(_gpu(node, i, product, vbios, mig) for i in range(count))
    return (
        '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'
        "<nvidia_smi_log>\n  <timestamp>Tue Dec  1 09:12:44 2026</timestamp>\n"
        f"  <driver_version>{driver}</driver_version>\n  <cuda_version>{cuda}</cuda_version>\n"
        f"  <attached_gpus>{count}</attached_gpus>\n{gpus}</nvidia_smi_log>\n"
    ).encode()
