"""A Kubernetes label selector (`matchLabels` and `matchExpressions`) against labels. PURE.

One reading for every check that asks "does this selector pick these labels": NetworkPolicy
pod selectors (K8S-007) and admission policies' namespace selectors (K8S-009). An operator
Kubernetes does not define selects nothing, as the API server would refuse the object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def selector_matches(
    match_labels: Mapping[str, str],
    match_expressions: Iterable[Mapping[str, Any]],
    labels: Mapping[str, str],
) -> bool:
    """True when every `matchLabels` pair and every expression holds (empty selects all)."""
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    return all(_expression_holds(e, labels) for e in match_expressions)


def _expression_holds(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression.get("key", ""), expression.get("operator", "")
    values = list(expression.get("values") or ())
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    return False
