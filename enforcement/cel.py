"""Evaluate a pack's CEL expressions as the admission engines do, with cel-python.

The engines evaluate `variables` in order (each may use the earlier ones), then the match
conditions (all true: the rule judges the object), then the validation (true: admitted). An
expression that fails to evaluate denies, as under `failurePolicy: Fail`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError


def _short_repr(self: CELEvalError) -> str:
    # Never repr the arguments: they hold the evaluation's activation (the whole object).
    first = self.args[0] if self.args else ""
    return f"{type(self).__name__}({first[:120] if isinstance(first, str) else type(first)})"


# cel-python 0.5.0 evaluates both sides of `||` and `&&` and, when both are errors (a `has()`
# guard on one side, a missing field on the other), formats both into a TypeError message;
# CELEvalError's repr renders its arguments, which hold the whole activation: about 0.5 s each.
# The short form keeps the error's text and makes a preview of a cluster take seconds.
CELEvalError.__repr__ = _short_repr


@lru_cache(maxsize=256)
def _program(expression: str) -> celpy.Runner:
    env = celpy.Environment()
    return env.program(env.compile(expression))


def evaluate(expression: str, activation: Mapping[str, Any]) -> Any:
    """The value of one expression; raises celpy.CELEvalError (or CELParseError)."""
    result = _program(expression).evaluate(dict(activation))
    if isinstance(result, celpy.CELEvalError):
        raise result
    return result


@dataclass(frozen=True)
class Verdict:
    admitted: bool
    error: str = ""  # the evaluation error that denied it, if any


def judge(
    *,
    variables: Iterable[tuple[str, str]],
    conditions: Iterable[str],
    expression: str,
    obj: dict,
    params: dict | None = None,
    old_obj: dict | None = None,
    request: dict | None = None,
) -> Verdict | None:
    """The verdict on one object, or None when a match condition excludes it."""
    activation: dict[str, Any] = {"object": celpy.json_to_cel(obj)}
    if params is not None:
        activation["params"] = celpy.json_to_cel(params)
    if old_obj is not None:
        activation["oldObject"] = celpy.json_to_cel(old_obj)
    if request is not None:
        activation["request"] = celpy.json_to_cel(request)
    try:
        values: dict[celtypes.StringType, Any] = {}
        for name, text in variables:
            activation["variables"] = celtypes.MapType(values)
            values[celtypes.StringType(name)] = evaluate(text, activation)
        activation["variables"] = celtypes.MapType(values)
        for condition in conditions:
            if not evaluate(condition, activation):
                return None
        return Verdict(admitted=bool(evaluate(expression, activation)))
    except (celpy.CELEvalError, celpy.CELParseError) as exc:
        return Verdict(admitted=False, error=_first_line(exc))


def _first_line(exc: Exception) -> str:
    text = str(exc.args[0] if exc.args else exc)
    return text.splitlines()[0][:200] if text else type(exc).__name__
