"""Kubernetes resource quantities ("1", "3k", "1000m", "2Gi", "1e3") as numbers. PURE.

The API server returns every quantity in canonical form, so a HAMi `nvidia.com/gpumem: 3000`
comes back as "3k" and a hand-written "1000m" GPU as "1": reading only plain integers loses
both. Suffixes as resource.Quantity parses them (binary Ki..Ei, decimal n..E, or an exponent).

Every GPU or accelerator count (node capacity and allocatable, pod requests and limits) is read
by gpu_count, and count_problem says where that count is not what was written: the API server
refuses a fractional or negative extended resource, so only a hand-edited file holds one.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<exponent>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(value: object) -> Decimal | None:
    """The quantity's value, or None when it is not a Kubernetes quantity (a JSON number is
    one: 8 or 1e3 as YAML or JSON wrote it; a boolean, a list or a map is not)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        return None
    found = _QUANTITY.match(str(value).strip())
    if not found:
        return None
    try:
        number = Decimal(found["number"])
    except InvalidOperation:
        return None
    if found["exponent"]:
        return number.scaleb(int(found["exponent"][1:]))
    suffix = found["suffix"] or ""
    if suffix in _BINARY:
        return number * (Decimal(1024) ** _BINARY[suffix])
    return number.scaleb(_DECIMAL[suffix])


def gpu_count(value: object) -> int:
    """A GPU (or other device) count, failing closed: a fraction is rounded up (a share still
    holds the device) and text that is no quantity counts as one (a pod asking for it is
    taken as holding the device, never as holding none); a negative count holds none."""
    number = parse_quantity(value)
    if number is None:
        return 1
    if number <= 0:
        return 0
    return int(number.to_integral_value(rounding=ROUND_CEILING))


def count_problem(value: object) -> str | None:
    """Why `value` is no whole, non-negative count ("not a Kubernetes quantity", "a
    fraction", "negative"), or None when it is one."""
    number = parse_quantity(value)
    if number is None:
        return "not a Kubernetes quantity"
    if number < 0:
        return "negative"
    if number != number.to_integral_value():
        return "a fraction"
    return None
