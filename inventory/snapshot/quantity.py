"""Kubernetes resource quantities ("1", "3k", "1000m", "2Gi", "1e3") as numbers. PURE.

The API server returns every quantity in canonical form, so a HAMi `nvidia.com/gpumem: 3000`
comes back as "3k" and a hand-written "1000m" GPU as "1": reading only plain integers loses
both. Suffixes as resource.Quantity parses them (binary Ki..Ei, decimal n..E, or an exponent).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<exponent>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(value: str | int) -> Decimal | None:
    """The quantity's value, or None when it is not a Kubernetes quantity."""
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
