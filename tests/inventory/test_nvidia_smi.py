"""nvidia-smi -q -x XML -> HostGpuFacts -> node summary; hostile input refused."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from inventory.sources.nvidia_smi import (
    MAX_INPUT_BYTES,
    GpuFacts,
    HostGpuFacts,
    MigDeviceFacts,
    NvidiaSmiError,
    parse_nvidia_smi,
    summarise,
)

DATA = Path(__file__).parent.parent / "data" / "nvidia-smi"
DOCTYPE = '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">'

H100_UUIDS = [
    "GPU-5e0b1c7a-93d2-4f6e-8a41-2c7d90b3e615",
    "GPU-a71f4d08-2b6c-4e95-b3d0-8f1e6c24a9d7",
]


def fixture(name: str) -> bytes:
    return (DATA / name).read_bytes()


def smi_xml(*gpus: str, head: str = "<driver_version>550.90.07</driver_version>") -> str:
    """A minimal nvidia-smi document around the given <gpu> elements."""
    return (
        f'<?xml version="1.0" ?>\n{DOCTYPE}\n<nvidia_smi_log>{head}{"".join(gpus)}</nvidia_smi_log>'
    )


def gpu_xml(body: str = "", bus_id: str = "00000000:07:00.0") -> str:
    return f'<gpu id="{bus_id}">{body}</gpu>'


def mig_xml(current: str | None, pending: str | None) -> str:
    parts = [
        f"<{tag}>{value}</{tag}>"
        for tag, value in (("current_mig", current), ("pending_mig", pending))
        if value is not None
    ]
    return f"<mig_mode>{''.join(parts)}</mig_mode>"


def vbios_gpu(version: str | None, bus: int) -> str:
    body = f"<vbios_version>{version}</vbios_version>" if version is not None else ""
    return gpu_xml(body, bus_id=f"00000000:{bus:02X}:00.0")


def only_gpu(xml: str) -> GpuFacts:
    (gpu,) = parse_nvidia_smi(xml).gpus
    return gpu


def billion_laughs() -> str:
    entities = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
    ]
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [{"".join(entities)}]>\n'
        "<nvidia_smi_log><timestamp>&lol9;</timestamp></nvidia_smi_log>"
    )


# --- the fixtures ----------------------------------------------------------------------------

H100_GPU0 = GpuFacts(
    pci_bus_id="00000000:07:00.0",
    product_name="NVIDIA H100 80GB HBM3",
    product_brand="NVIDIA",
    product_architecture="Hopper",
    uuid=H100_UUIDS[0],
    serial="1654023198471",
    vbios_version="96.00.99.00.01",
    mig_mode_current="Enabled",
    mig_mode_pending="Enabled",
    memory_total_mib=81559,
    # The <process_info> under <processes> also has a gpu_instance_id: not a MIG device.
    mig_devices=(
        MigDeviceFacts(
            gpu_instance_id=2, compute_instance_id=0, profile_name=None, memory_total_mib=40448
        ),
        MigDeviceFacts(
            gpu_instance_id=3, compute_instance_id=0, profile_name=None, memory_total_mib=20096
        ),
        MigDeviceFacts(
            gpu_instance_id=9, compute_instance_id=0, profile_name=None, memory_total_mib=9984
        ),
    ),
)
H100_GPU1 = dataclasses.replace(
    H100_GPU0,
    pci_bus_id="00000000:0F:00.0",
    uuid=H100_UUIDS[1],
    serial="1654023198502",
    mig_mode_current="Disabled",
    mig_mode_pending="Enabled",
    mig_devices=(),
)
A100 = GpuFacts(
    pci_bus_id="00000000:00:04.0",
    product_name="NVIDIA A100-SXM4-40GB",
    product_brand="NVIDIA",
    product_architecture=None,
    uuid="GPU-3c9e27b4-6a15-48d0-9f72-b05d1e8c4a36",
    serial="1323120045817",
    vbios_version="92.00.45.00.03",
    mig_mode_current="Disabled",
    mig_mode_pending="Disabled",
    memory_total_mib=40960,
    mig_devices=(),
)
T4 = GpuFacts(
    pci_bus_id="00000000:00:1E.0",
    product_name="Tesla T4",
    product_brand="NVIDIA",
    product_architecture=None,
    uuid="GPU-d4087b2e-1f6a-4c3b-a859-70e2c91f5db8",
    serial="1564320017342",
    vbios_version="90.04.96.00.02",
    mig_mode_current=None,
    mig_mode_pending=None,
    memory_total_mib=15109,
    mig_devices=(),
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "h100-mig.xml",
            HostGpuFacts("550.90.07", "12.4", "Tue Jun 11 09:12:44 2024", (H100_GPU0, H100_GPU1)),
        ),
        ("a100-nomig.xml", HostGpuFacts("535.183.01", "12.2", "Mon Aug 19 14:03:27 2024", (A100,))),
        ("t4-old.xml", HostGpuFacts("470.182.03", "11.4", "Thu Mar  2 07:45:10 2023", (T4,))),
    ],
)
def test_fixture_facts(name: str, expected: HostGpuFacts) -> None:
    assert parse_nvidia_smi(fixture(name)) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "h100-mig.xml",
            {
                "driver_version": "550.90.07",
                "cuda_driver_version": "12.4",
                "firmware_version": "96.00.99.00.01",
                "firmware_versions": ["96.00.99.00.01"],
                "gpu_model": "NVIDIA H100 80GB HBM3",
                "gpu_count": 2,
                "mig_enabled": True,
                "gpu_uuids": H100_UUIDS,
                "mig_pending_change": True,
            },
        ),
        (
            "a100-nomig.xml",
            {
                "driver_version": "535.183.01",
                "cuda_driver_version": "12.2",
                "firmware_version": "92.00.45.00.03",
                "firmware_versions": ["92.00.45.00.03"],
                "gpu_model": "NVIDIA A100-SXM4-40GB",
                "gpu_count": 1,
                "mig_enabled": False,
                "gpu_uuids": [A100.uuid],
                "mig_pending_change": False,
            },
        ),
        (
            "t4-old.xml",
            {
                "driver_version": "470.182.03",
                "cuda_driver_version": "11.4",
                "firmware_version": "90.04.96.00.02",
                "firmware_versions": ["90.04.96.00.02"],
                "gpu_model": "Tesla T4",
                "gpu_count": 1,
                "mig_enabled": False,
                "gpu_uuids": [T4.uuid],
                "mig_pending_change": False,
            },
        ),
    ],
)
def test_fixture_summary(name: str, expected: dict[str, Any]) -> None:
    assert summarise(parse_nvidia_smi(fixture(name))) == expected


@pytest.mark.parametrize("name", ["h100-mig.xml", "a100-nomig.xml", "t4-old.xml"])
def test_text_and_bytes_parse_alike_with_the_real_doctype_line(name: str) -> None:
    raw = fixture(name)
    assert b"<!DOCTYPE nvidia_smi_log SYSTEM" in raw
    assert parse_nvidia_smi(raw.decode()) == parse_nvidia_smi(raw)


def test_facts_are_frozen() -> None:
    facts = parse_nvidia_smi(fixture("a100-nomig.xml"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts.gpus[0].uuid = "GPU-other"


# --- values ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "no_value", ["N/A", "[N/A]", "Not Supported", "[Not Supported]", "", "  N/A\n  "]
)
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("<serial>{}</serial>", "serial"),
        ("<uuid>{}</uuid>", "uuid"),
        ("<vbios_version>{}</vbios_version>", "vbios_version"),
        ("<product_architecture>{}</product_architecture>", "product_architecture"),
        ("<mig_mode><current_mig>{}</current_mig></mig_mode>", "mig_mode_current"),
        ("<mig_mode><pending_mig>{}</pending_mig></mig_mode>", "mig_mode_pending"),
        ("<fb_memory_usage><total>{}</total></fb_memory_usage>", "memory_total_mib"),
    ],
)
def test_no_value_markers_are_none(no_value: str, body: str, field: str) -> None:
    assert getattr(only_gpu(smi_xml(gpu_xml(body.format(no_value)))), field) is None


def test_missing_elements_are_none() -> None:
    host = parse_nvidia_smi(smi_xml(gpu_xml(), head=""))
    assert host == HostGpuFacts(
        driver_version=None,
        cuda_version=None,
        timestamp=None,
        gpus=(GpuFacts("00000000:07:00.0", *([None] * 9), mig_devices=()),),
    )


@pytest.mark.parametrize(
    ("total", "expected"),
    [
        ("81559 MiB", 81559),
        ("  40960 MiB ", 40960),
        ("15109MiB", 15109),
        ("80 GiB", None),
        ("lots", None),
    ],
)
def test_memory_total_in_mib(total: str, expected: int | None) -> None:
    body = f"<fb_memory_usage><total>{total}</total></fb_memory_usage>"
    assert only_gpu(smi_xml(gpu_xml(body))).memory_total_mib == expected


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        (
            "<gpu_instance_id>1</gpu_instance_id><compute_instance_id>0</compute_instance_id>"
            "<profile_name>MIG 3g.40gb</profile_name>"
            "<fb_memory_usage><total>40448 MiB</total></fb_memory_usage>",
            MigDeviceFacts(1, 0, "MIG 3g.40gb", 40448),
        ),
        # A device nvidia-smi cannot query reports N/A; it still counts as a MIG device.
        (
            "<gpu_instance_id>N/A</gpu_instance_id><compute_instance_id>N/A</compute_instance_id>"
            "<fb_memory_usage><total>N/A</total></fb_memory_usage>",
            MigDeviceFacts(None, None, None, None),
        ),
        ("", MigDeviceFacts(None, None, None, None)),
    ],
)
def test_mig_device_values(device: str, expected: MigDeviceFacts) -> None:
    body = f"<mig_devices><mig_device>{device}</mig_device></mig_devices>"
    assert only_gpu(smi_xml(gpu_xml(body))).mig_devices == (expected,)


def test_bus_id_falls_back_to_the_pci_block() -> None:
    xml = smi_xml("<gpu><pci><pci_bus_id>00000000:41:00.0</pci_bus_id></pci></gpu>")
    assert only_gpu(xml).pci_bus_id == "00000000:41:00.0"


# --- summary ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("versions", "lowest", "distinct"),
    [
        (["96.00.99.00.01", "96.00.99.00.01"], "96.00.99.00.01", ["96.00.99.00.01"]),
        # Numeric, not text, order: 100 > 99 although "100" < "99" as text.
        (
            ["96.00.100.00.01", "96.00.99.00.01"],
            "96.00.99.00.01",
            ["96.00.99.00.01", "96.00.100.00.01"],
        ),
        (
            ["96.00.99.00.01", "96.00.74.00.0B", "96.00.99.00.01"],
            "96.00.74.00.0B",
            ["96.00.74.00.0B", "96.00.99.00.01"],
        ),
        # VBIOS components may be hex: 9A (154) is above 10.
        (
            ["90.04.9A.00.01", "90.04.10.00.01"],
            "90.04.10.00.01",
            ["90.04.10.00.01", "90.04.9A.00.01"],
        ),
        # A shorter version is lower than the same prefix followed by more components.
        (["96.00.99.00.01", "96.00.99"], "96.00.99", ["96.00.99", "96.00.99.00.01"]),
        # A GPU that does not report its VBIOS is left out, not counted as lowest.
        (["92.00.45.00.03", "N/A", None], "92.00.45.00.03", ["92.00.45.00.03"]),
        ([None, "[N/A]"], None, []),
    ],
)
def test_firmware_version_is_the_lowest(
    versions: list[str | None], lowest: str | None, distinct: list[str]
) -> None:
    xml = smi_xml(*(vbios_gpu(v, bus) for bus, v in enumerate(versions)))
    summary = summarise(parse_nvidia_smi(xml))
    assert (summary["firmware_version"], summary["firmware_versions"]) == (lowest, distinct)


@pytest.mark.parametrize(
    ("modes", "enabled", "pending_change"),
    [
        ([("Enabled", "Enabled")], True, False),
        ([("Disabled", "Disabled")], False, False),
        ([("Disabled", "Enabled")], False, True),
        ([("Enabled", "Disabled")], True, True),
        ([("Disabled", "Disabled"), ("Enabled", "Enabled")], True, False),
        # Unknown on either side (pre-Ampere GPUs, old drivers) is not a pending change.
        ([("N/A", "N/A")], False, False),
        ([("Disabled", "N/A")], False, False),
        ([(None, None)], False, False),
    ],
)
def test_mig_summary(
    modes: list[tuple[str | None, str | None]], enabled: bool, pending_change: bool
) -> None:
    gpus = [
        gpu_xml(mig_xml(c, p), bus_id=f"00000000:{i:02X}:00.0") for i, (c, p) in enumerate(modes)
    ]
    summary = summarise(parse_nvidia_smi(smi_xml(*gpus)))
    assert (summary["mig_enabled"], summary["mig_pending_change"]) == (enabled, pending_change)


def test_summary_of_gpus_without_names_or_uuids() -> None:
    summary = summarise(parse_nvidia_smi(smi_xml(gpu_xml(), gpu_xml(bus_id="00000000:08:00.0"))))
    assert (summary["gpu_model"], summary["gpu_count"], summary["gpu_uuids"]) == (None, 2, [])


# --- hostile and wrong input -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (billion_laughs(), "XML entities are not allowed"),
        (
            '<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
            "<nvidia_smi_log><driver_version>&x;</driver_version>"
            + gpu_xml()
            + "</nvidia_smi_log>",
            "XML entities are not allowed",
        ),
        (
            '<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log '
            '[<!ENTITY % p SYSTEM "http://example.invalid/x.dtd"> %p;]>'
            "<nvidia_smi_log>" + gpu_xml() + "</nvidia_smi_log>",
            "XML entities are not allowed",
        ),
        (
            "==============NVSMI LOG==============\n\nDriver Version : 550.90.07\n",
            "not XML",
        ),
        ("<nvidia_smi_log><gpu id='x'>", "not XML"),
        ("", "empty input"),
        (b"  \n", "empty input"),
        (
            "<html><body>502 Bad Gateway</body></html>",
            "not nvidia-smi -q -x output: root element is <html>",
        ),
        (smi_xml(), "no <gpu> elements"),
        (smi_xml("<gpu><product_name>Tesla T4</product_name></gpu>"), "no id attribute"),
        ("<nvidia_smi_log>" + " " * MAX_INPUT_BYTES + "</nvidia_smi_log>", "over the 5 MB limit"),
        # Under the limit in characters, over it in UTF-8 bytes.
        (
            "<nvidia_smi_log>" + "é" * (MAX_INPUT_BYTES // 2 + 1) + "</nvidia_smi_log>",
            "over the 5 MB limit",
        ),
        (
            b"<nvidia_smi_log>" + b" " * MAX_INPUT_BYTES + b"</nvidia_smi_log>",
            "over the 5 MB limit",
        ),
        (None, "expected the bytes or text of nvidia-smi output"),
    ],
    ids=[
        "billion-laughs",
        "external-entity",
        "external-parameter-entity",
        "text-not-xml",
        "truncated",
        "empty",
        "blank-bytes",
        "wrong-root",
        "no-gpus",
        "gpu-without-bus-id",
        "too-large",
        "too-large-in-utf8",
        "too-large-bytes",
        "not-text",
    ],
)
def test_refused_input(content: Any, message: str) -> None:
    with pytest.raises(NvidiaSmiError, match=re.escape(message)) as excinfo:
        parse_nvidia_smi(content)
    assert isinstance(excinfo.value, ValueError)
