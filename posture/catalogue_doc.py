"""docs/checks.md, written from the check registry so the catalogue a newcomer reads is the one
the product runs (`make docs` rewrites it; a test fails when it is out of date)."""

from __future__ import annotations

from pathlib import Path

from posture.rules import CHECKS

DOC_PATH = Path(__file__).resolve().parent.parent / "docs" / "checks.md"
FAMILIES = {
    "SHARE": "Sharing: who shares a GPU with whom, and in which mode",
    "STACK": "GPU stack: versions, bulletins, configuration",
    "POD": "Pods: what a tenant's GPU workload may do to the node",
    "K8S": "Kubernetes: quotas, taints, RBAC around the GPUs",
    "LEAK": "Leaks between tenants on the same GPU",
    "ATTR": "Attribution: GPU use no workload explains",
    "DRIFT": "Drift: changes to the GPU stack between syncs",
    "TEN": "Tenancy: GPU workloads nobody owns",
    "DRA": "Dynamic Resource Allocation",
    "PROV": "Providers (neoclouds)",
}


def _family(check_id: str) -> str:
    return check_id.split("-")[0]


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def catalogue_markdown() -> str:
    lines = [
        "# Check catalogue",
        "",
        "Every check gpuposture runs, by family: what fires it, why it matters, how to fix it,",
        "and the framework controls it maps to. The same catalogue is on the Checks page and at",
        "`/api/v1/checks/`. This file is written from the code by `make docs`.",
    ]
    order = list(FAMILIES)
    families = sorted({_family(c) for c in CHECKS}, key=lambda f: (order + [f]).index(f))
    for family in families:
        lines += ["", f"## {FAMILIES.get(family, family)}", ""]
        lines += ["| id | check | severity | scope | mappings |", "|---|---|---|---|---|"]
        checks = sorted((c for c in CHECKS.values() if _family(c.id) == family), key=_order)
        for c in checks:
            mappings = ", ".join(c.mappings)
            lines.append(f"| `{c.id}` | {_cell(c.title)} | {c.severity} | {c.scope} | {mappings} |")
        for c in checks:
            lines += ["", f"**{c.id}**: {_cell(c.rationale)}", "", f"Fix: {_cell(c.remediation)}"]
            if c.severity_rule:
                lines += ["", f"Severity per finding: {_cell(c.severity_rule)}"]
    return "\n".join(lines) + "\n"


def _order(check) -> tuple[str, int]:
    prefix, _, number = check.id.partition("-")
    return prefix, int(number) if number.isdigit() else 0
