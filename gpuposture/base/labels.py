"""Words for the codes people read: sharing modes, strategies, statuses and evidence keys.

The one display-name mapping every template uses (through the `words` filter in
gpuposture.base.templatetags): the API and the database keep the slugs (`mig_gi`), a page says
"MIG GPU instance". PURE data and functions; a code with no entry reads as itself with its
underscores as spaces, so a new code is never hidden.
"""

from __future__ import annotations

from typing import Any

WORDS: dict[str, str] = {
    # DESIGN §2 sharing modes (tenants.policy.SHARING_MODES)
    "exclusive": "whole GPU (exclusive)",
    "mig_gi": "MIG GPU instance",
    "mig_ci": "MIG compute instance",
    "vgpu_fixed": "vGPU, fixed share",
    "vgpu_equal": "vGPU, equal share",
    "vgpu_best_effort": "vGPU, best effort",
    "mps": "MPS (Multi-Process Service)",
    "time_slicing": "time-slicing",
    # node sharing strategies (DESIGN §8)
    "mig": "MIG",
    "vgpu": "vGPU",
    "none": "none",
    # GPU-stack components (inventory.components.COMPONENT_FIELDS; `dcgm`, the DCGM an
    # exporter bundles), as NVIDIA names the products
    "container_toolkit": "Container Toolkit",
    "device_plugin": "device plugin",
    "gpu_operator": "GPU Operator",
    "dcgm_exporter": "DCGM exporter",
    "dcgm": "DCGM",
    "mig_manager": "MIG manager",
    "dra_driver": "DRA driver",
    # patch status
    "below_baseline": "below baseline",
    "current": "current",
    "unknown": "unknown",
    # checklist evidence keys (posture.checklist)
    "classes": "trust class → sharing modes it allows",
    "without_modes": "classes that allow no mode",
    "open_findings": "open findings by check",
    "gpu_nodes_checked": "GPU nodes checked",
    "other_accelerator_nodes_checked": "AMD, Intel or Gaudi GPU nodes checked",
    "accelerator_nodes_not_inventoried": "AMD, Intel or Gaudi GPU nodes not inventoried",
    "time_sliced_nodes": "time-sliced nodes",
    "days_since_last_import": "days since the last import",
    "reset_attestations": "GPU resets recorded",
    # questionnaire answers and audit fields people read
    "yes": "yes",
    "no": "no",
    "partial": "partly",
    "not_applicable": "not applicable",
    "n_a": "not applicable",
    "na": "not applicable",
    "trust_class": "trust class",
    "accepted_by": "accepted by",
    "accepted_until": "accepted until",
}


def words(code: Any) -> str:
    """A code as a person reads it; anything that is not a string is shown as it is."""
    if not isinstance(code, str):
        return "" if code is None else str(code)
    return WORDS.get(code, code.replace("_", " ") if code.isidentifier() else code)


def evidence_rows(evidence: Any) -> list[dict[str, Any]]:
    """A JSON-ish evidence object as rows a page shows as a table: each key in words, with a
    text, a list of words, or a small table (key -> value(s)) for a nested mapping."""
    if not isinstance(evidence, dict):
        return [{"label": "", "kind": "text", "value": _text(evidence)}]
    rows = []
    for key, value in evidence.items():
        label = words(key)
        if isinstance(value, dict):
            table = [(words(k), _text(v)) for k, v in value.items()]
            rows.append({"label": label, "kind": "table", "value": table})
        else:
            rows.append({"label": label, "kind": "text", "value": _text(value)})
    return rows


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value) if value else "none"
    if isinstance(value, dict):
        return "; ".join(f"{words(k)}: {_text(v)}" for k, v in value.items()) or "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return words(value)
