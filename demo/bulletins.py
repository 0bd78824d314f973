"""Five CSAF 2.0 bulletins for the demo, written here in NVIDIA's product-tree shape, and a
later revision of one that weakens it (held for a security lead). The facts (fixed versions per
branch, CVE ids, CVSS) restate public bulletins; the text is our own.
PURE: returns dicts for `inventory.bulletins.store.bulletin_import`."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def _version(arch: str, line: str, name: str) -> Obj:
    pid = f"{arch}_{line}_{name}".lower().replace(" ", "_").replace(".", "_").replace("(", "")
    pid = pid.replace(")", "")
    return {
        "category": "product_version",
        "name": line,
        "product": {"name": name, "product_id": pid},
    }


def _advisory(tracking: str, title: str, released: str, severity: str) -> Obj:
    return {
        "category": "csaf_security_advisory",
        "csaf_version": "2.0",
        "title": title,
        "aggregate_severity": {"text": severity},
        "publisher": {
            "category": "vendor",
            "name": "NVIDIA (restated for the gpuposture demo)",
            "namespace": "https://www.nvidia.com",
        },
        "distribution": {"tlp": {"label": "WHITE"}},
        "tracking": {
            "id": tracking,
            "status": "final",
            "version": "1.0.0",
            "initial_release_date": released,
            "current_release_date": released,
            "revision_history": [{"date": released, "number": "1.0.0", "summary": "Demo copy"}],
        },
    }


def _vulnerability(
    cve: str,
    score: float,
    severity: str,
    affected: list[str],
    fixed: list[str],
    remediations: list[Obj] | None = None,
) -> Obj:
    return {
        "cve": cve,
        "product_status": {"known_affected": affected, "fixed": fixed},
        "remediations": remediations or [],
        "scores": [
            {
                "cvss_v3": {"baseScore": score, "baseSeverity": severity, "version": "3.1"},
                "products": affected,
            }
        ],
    }


def _remedy(category: str, products: list[str], details: str, a_id: str) -> Obj:
    """A CSAF remediation of `products`, pointing at NVIDIA's bulletin it restates (our words)."""
    url = f"https://nvidia.custhelp.com/app/answers/detail/a_id/{a_id}"
    return {"category": category, "details": details, "product_ids": products, "url": url}


def _upgrades(affected: list[str], names: list[str], a_id: str) -> list[Obj]:
    """One vendor_fix per affected product: upgrade to its fixed version (named in `names`)."""
    return [
        _remedy("vendor_fix", [a], f"Upgrade to {n} or later.", a_id)
        for a, n in zip(affected, names, strict=True)
    ]


def _vendor(branches: list[Obj]) -> Obj:
    return {"category": "vendor", "name": "NVIDIA", "branches": branches}


TOOLKIT_TITLE = "Container Toolkit and GPU Operator - February 2025 (demo)"


DRIVER_FIXES = (("R550", "550.163.01"), ("R535", "535.247.01"))


def driver_bulletin() -> Obj:
    """April 2025 data-center driver fixes: R550 550.163.01, R535 535.247.01."""
    return _driver(DRIVER_FIXES)


def driver_bulletin_revised() -> Obj:
    """A revision 1.1.0 of the driver bulletin that no longer lists the R535 branch (as when a
    vendor moves a branch to a bulletin of its own). It would close the STACK-001 findings of
    R535 nodes that are still below 535.247.01, so gpuposture holds it for a security lead."""
    data = _driver(DRIVER_FIXES[:1])
    tracking = data["document"]["tracking"]
    tracking["version"], tracking["current_release_date"] = "1.1.0", "2025-05-06T00:00:00Z"
    tracking["revision_history"].append(
        {
            "date": "2025-05-06T00:00:00Z",
            "number": "1.1.0",
            "summary": "R535 moved to a bulletin of its own (demo)",
        }
    )
    return data


JANUARY_FIXES = (("R570", "570.86.15"), ("R550", "550.144.03"), ("R535", "535.230.02"))


def driver_bulletin_january() -> Obj:
    """January 2025 data-center driver fixes, R570 among them. The April bulletin (restated
    here with R550 and R535 only) leaves R570 out: a node on R570 is never `current` by it,
    but unknown, "out of support, or not affected"."""
    return _driver(
        JANUARY_FIXES,
        advisory=_advisory(
            "demo-5614", "GPU Display Driver - January 2025 (demo)", "2025-01-16T00:00:00Z", "HIGH"
        ),
        cves=(("CVE-2024-0150", 7.1, "HIGH"), ("CVE-2024-53869", 5.5, "MEDIUM")),
    )


_APRIL = (("CVE-2025-23244", 7.8, "HIGH"), ("CVE-2025-23245", 5.5, "MEDIUM"))


def _driver(
    fixed_by_branch: tuple[tuple[str, str], ...],
    advisory: Obj | None = None,
    cves: tuple[tuple[str, float, str], ...] = _APRIL,
) -> Obj:
    branches = []
    for branch, fixed in fixed_by_branch:
        arch = f"Linux({branch})"
        branches.append(
            {
                "category": "architecture",
                "name": arch,
                "branches": [
                    _version(arch, "Tesla", f"All driver versions prior to {fixed}"),
                    _version(arch, "Tesla", fixed),
                ],
            }
        )
    ids = [b["branches"][0]["product"]["product_id"] for b in branches]
    fixes = [b["branches"][1]["product"]["product_id"] for b in branches]
    document = advisory or _advisory(
        "demo-5630", "GPU Display Driver - April 2025 (demo)", "2025-04-24T00:00:00Z", "HIGH"
    )
    names = [f"data-center driver {fixed} ({branch} branch)" for branch, fixed in fixed_by_branch]
    a_id = document["tracking"]["id"].removeprefix("demo-")
    upgrades = _upgrades(ids, names, a_id)
    return {
        "document": document,
        "product_tree": {"branches": [_vendor(branches)]},
        "vulnerabilities": [
            _vulnerability(cve, score, severity, ids, fixes, upgrades)
            for cve, score, severity in cves
        ],
    }


def toolkit_bulletin() -> Obj:
    """February 2025: Container Toolkit up to 1.17.3 and GPU Operator up to 24.9.1 affected."""
    arch = "Linux"
    products = [
        _version(arch, "NVIDIA Container Toolkit", "All versions up to and including 1.17.3"),
        _version(arch, "NVIDIA Container Toolkit", "1.17.4"),
        _version(arch, "NVIDIA GPU Operator", "All versions up to and including 24.9.1"),
        _version(arch, "NVIDIA GPU Operator", "24.9.2"),
    ]
    ids = [p["product"]["product_id"] for p in products]
    return {
        "document": _advisory("demo-5616", TOOLKIT_TITLE, "2025-02-11T00:00:00Z", "HIGH"),
        "product_tree": {
            "branches": [
                {
                    "category": "vendor",
                    "name": "NVIDIA",
                    "branches": [{"category": "architecture", "name": arch, "branches": products}],
                }
            ]
        },
        "vulnerabilities": [
            _vulnerability(
                "CVE-2025-23359",
                8.3,
                "HIGH",
                ids[0::2],
                ids[1::2],
                _upgrades(
                    ids[0::2],
                    ["NVIDIA Container Toolkit 1.17.4", "NVIDIA GPU Operator 24.9.2"],
                    "5616",
                ),
            )
        ],
    }


def cdi_bulletin() -> Obj:
    """July 2025: a container escape through the toolkit's hooks. Some bounds hold only in CDI
    mode or for CDI device-list strategies, which the node page shows beside the facts."""
    arch = "Linux"
    products = [
        _version(
            arch,
            "NVIDIA Container Toolkit",
            "All versions up to and including 1.17.7 (CDI mode only for versions before 1.17.5)",
        ),
        _version(arch, "NVIDIA Container Toolkit", "1.17.8"),
        _version(
            arch,
            "NVIDIA GPU Operator",
            "All versions up to and including 25.3.1 (CDI mode only for versions before 25.3.1)",
        ),
        _version(arch, "NVIDIA GPU Operator", "25.3.2"),
        _version(
            arch,
            "NVIDIA k8s Device Plugin",
            "All versions up to and including 0.17.2 "
            "(only when the device list strategy is cdi-annotations or cdi-cri)",
        ),
        _version(arch, "NVIDIA k8s Device Plugin", "0.17.3"),
    ]
    ids = [p["product"]["product_id"] for p in products]
    return {
        "document": _advisory("demo-5659", CDI_TITLE, "2025-07-15T00:00:00Z", "CRITICAL"),
        "product_tree": {
            "branches": [
                {
                    "category": "vendor",
                    "name": "NVIDIA",
                    "branches": [{"category": "architecture", "name": arch, "branches": products}],
                }
            ]
        },
        "vulnerabilities": [
            _vulnerability(
                "CVE-2025-23266",
                9.0,
                "CRITICAL",
                ids[0::2],
                ids[1::2],
                _cdi_remedies(ids[0::2], hook=True),
            ),
            _vulnerability(
                "CVE-2025-23267",
                8.5,
                "HIGH",
                ids[0::2],
                ids[1::2],
                _cdi_remedies(ids[0::2], hook=False),
            ),
        ],
    }


CDI_TITLE = "Container Toolkit, GPU Operator and device plugin - July 2025 (demo)"


def _cdi_remedies(affected: list[str], hook: bool) -> list[Obj]:
    """The upgrades, and for CVE-2025-23266 (`hook`) the toolkit and operator mitigation."""
    names = [
        "NVIDIA Container Toolkit 1.17.8",
        "NVIDIA GPU Operator 25.3.2",
        "NVIDIA k8s Device Plugin 0.17.3",
    ]
    details = (
        "Until the upgrade, turn off the toolkit's enable-cuda-compat hook: set "
        "features.disable-cuda-compat-lib-hook = true in the toolkit's config.toml, or with the "
        "GPU Operator add the toolkit env NVIDIA_CONTAINER_TOOLKIT_OPT_IN_FEATURES="
        "disable-cuda-compat-lib-hook to the ClusterPolicy."
    )
    mitigation = [_remedy("mitigation", affected[:2], details, "5659")] if hook else []
    return _upgrades(affected, names, "5659") + mitigation


def dcgm_bulletin() -> Obj:
    """July 2026: DCGM Exporter before 4.8.2 (CVE-2026-47483, network denial of service). NVIDIA
    names the affected range "0.0 to 4.8.2" while naming 4.8.2 the fix; restated here as "prior
    to 4.8.2". A node that runs no exporter is not installed, so not judged by it. DCGM before
    4.5.3 is affected too: the exporter image 3.3.9-3.6.1 bundles DCGM 3.3.9."""
    arch = "All(4.8)"
    products = [
        _version(arch, "DCGM Exporter", "All versions prior to 4.8.2"),
        _version(arch, "DCGM Exporter", "4.8.2"),
        # DCGM itself, which each exporter image bundles (its tag's first number).
        _version(arch, "DCGM", "All versions prior to 4.5.3"),
        _version(arch, "DCGM", "4.5.3"),
    ]
    ids = [p["product"]["product_id"] for p in products]
    return {
        "document": _advisory(
            "demo-5857", "DCGM Exporter - July 2026 (demo)", "2026-07-28T00:00:00Z", "HIGH"
        ),
        "product_tree": {
            "branches": [
                {
                    "category": "vendor",
                    "name": "NVIDIA",
                    "branches": [{"category": "architecture", "name": arch, "branches": products}],
                }
            ]
        },
        "vulnerabilities": [
            _vulnerability(
                "CVE-2026-47483",
                8.2,
                "HIGH",
                ids[0::2],
                ids[1::2],
                [
                    *_upgrades(ids[0::2], ["DCGM Exporter 4.8.2", "DCGM 4.5.3"], "5857"),
                    _remedy(
                        "workaround",
                        ids[:1],
                        "Until the upgrade, let only the Prometheus scraper reach the "
                        "exporter's metrics port (9400): a NetworkPolicy on the exporter's pods, "
                        "or a firewall rule on nodes whose exporter uses the host network.",
                        "5857",
                    ),
                ],
            ),
        ],
    }


BULLETINS = (
    driver_bulletin_january,
    driver_bulletin,
    toolkit_bulletin,
    cdi_bulletin,
    dcgm_bulletin,
)
