"""Our own NVIDIA-shaped CSAF 2.0 advisories for tests: the envelope NVIDIA's bulletins share
(publisher, tracking, a vendor branch of architectures) around one CVE, its affected and fixed
product ids and a CVSS v3.1 score. Callers write the architecture branches, which differ by
component (drivers by branch, the vGPU Manager by hypervisor and branch)."""

from __future__ import annotations


def cvss_severity(cvss: float) -> str:
    return "CRITICAL" if cvss >= 9 else "HIGH" if cvss >= 7 else "MEDIUM"


def product_version(component: str, product_name: str, product_id: str) -> dict:
    """One leaf of the product tree: `component` ("Tesla", "Virtual GPU Manager") at a version
    range or fix named as NVIDIA writes them."""
    return {
        "category": "product_version",
        "name": component,
        "product": {"name": product_name, "product_id": product_id},
    }


def nvidia_advisory(
    *,
    tracking: str,
    title: str,
    released: str,
    architectures: list[dict],
    cve: str,
    affected: list[str],
    fixed: list[str],
    cvss: float,
    version: str = "1",
) -> dict:
    return {
        "document": {
            "category": "csaf_security_advisory",
            "csaf_version": "2.0",
            "title": title,
            "publisher": {
                "category": "vendor",
                "name": "NVIDIA",
                "namespace": "https://nvidia.com",
            },
            "tracking": {
                "id": tracking,
                "status": "final",
                "version": version,
                "initial_release_date": released,
                "current_release_date": released,
            },
        },
        "product_tree": {
            "branches": [{"category": "vendor", "name": "NVIDIA", "branches": architectures}]
        },
        "vulnerabilities": [
            {
                "cve": cve,
                "product_status": {"known_affected": affected, "fixed": fixed},
                "scores": [
                    {
                        "cvss_v3": {
                            "version": "3.1",
                            "baseScore": cvss,
                            "baseSeverity": cvss_severity(cvss),
                        },
                        "products": affected,
                    }
                ],
            }
        ],
    }
