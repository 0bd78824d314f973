"""Calico's label selector expressions, parsed and matched against labels (K8S-007). PURE.

Calico writes a policy's `selector` and `namespaceSelector` as expressions, not as Kubernetes
matchLabels: `all()`, `global()`, `has(k)`, `k == 'v'`, `k != 'v'`, `k in {'a', 'b'}`,
`k not in {...}`, `k contains 's'`, `k starts with 's'`, `k ends with 's'`, `!`, `&&`, `||`
and parentheses (Calico's selector reference). An empty selector is `all()`. Anything else
is not parsed (None): the caller then says it cannot tell, never guesses.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Matcher = Callable[[dict[str, str]], bool]

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<str>'[^']*'|"[^"]*")
        | (?P<op>==|!=|&&|\|\||!|\(|\)|\{|\}|,)
        | (?P<word>[A-Za-z0-9_./-]+(?:\(\))?)
    )""",
    re.VERBOSE,
)


def parse_selector(selector: str) -> Matcher | None:
    """A function telling whether labels match the selector; None when it is not parsed."""
    tokens = _tokens(selector)
    if tokens is None:
        return None
    if not tokens:
        return lambda labels: True
    parser = _Parser(tokens)
    try:
        matcher = parser.either()
    except ValueError:
        return None
    return matcher if parser.done() else None


def _tokens(selector: str) -> list[str] | None:
    tokens: list[str] = []
    position = 0
    while position < len(selector):
        if not selector[position:].strip():
            break
        found = _TOKEN.match(selector, position)
        if not found or found.end() == position:
            return None
        tokens.append(found.group(found.lastgroup or "word"))
        position = found.end()
    return tokens


class _Parser:
    """Recursive descent: either := both ('||' both)*; both := unary ('&&' unary)*;
    unary := '!' unary | '(' either ')' | term."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.at = 0

    def done(self) -> bool:
        return self.at == len(self.tokens)

    def peek(self) -> str:
        return self.tokens[self.at] if self.at < len(self.tokens) else ""

    def take(self) -> str:
        if self.done():
            raise ValueError("selector ends early")
        self.at += 1
        return self.tokens[self.at - 1]

    def either(self) -> Matcher:
        parts = [self.both()]
        while self.peek() == "||":
            self.take()
            parts.append(self.both())
        return parts[0] if len(parts) == 1 else lambda labels: any(p(labels) for p in parts)

    def both(self) -> Matcher:
        parts = [self.unary()]
        while self.peek() == "&&":
            self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else lambda labels: all(p(labels) for p in parts)

    def unary(self) -> Matcher:
        word = self.take()
        if word == "!":
            inner = self.unary()
            return lambda labels: not inner(labels)
        if word == "(":
            inner = self.either()
            if self.take() != ")":
                raise ValueError("unclosed parenthesis")
            return inner
        if word in ("all()", "global()"):
            # global() picks what has no namespace: never a pod (matched as a namespace: none).
            return (lambda labels: True) if word == "all()" else (lambda labels: False)
        if word == "has":
            if self.take() != "(":
                raise ValueError("has needs a key")
            key = self.take_word()
            if self.take() != ")":
                raise ValueError("has takes one key")
            return lambda labels: key in labels
        return self.term(word)

    def take_word(self) -> str:
        word = self.take()
        if not re.fullmatch(r"[A-Za-z0-9_./-]+", word):
            raise ValueError("a label key is expected")
        return word

    def term(self, key: str) -> Matcher:
        if not re.fullmatch(r"[A-Za-z0-9_./-]+", key):
            raise ValueError("a label key is expected")
        op = self.take()
        if op in ("==", "!="):
            value = _string(self.take())
            if op == "==":
                return lambda labels: labels.get(key) == value
            return lambda labels: labels.get(key) != value
        if op == "not" and self.take() == "in":
            values = self.values()
            return lambda labels: labels.get(key) not in values
        if op == "in":
            values = self.values()
            return lambda labels: labels.get(key) in values
        if op == "contains":
            part = _string(self.take())
            return lambda labels: key in labels and part in labels[key]
        if op in ("starts", "ends") and self.take() == "with":
            part = _string(self.take())
            if op == "starts":
                return lambda labels: key in labels and labels[key].startswith(part)
            return lambda labels: key in labels and labels[key].endswith(part)
        raise ValueError(f"operator {op!r} is not read")

    def values(self) -> frozenset[str]:
        if self.take() != "{":
            raise ValueError("a set is expected")
        values: set[str] = set()
        while self.peek() != "}":
            values.add(_string(self.take()))
            if self.peek() == ",":
                self.take()
        self.take()
        return frozenset(values)


def _string(token: str) -> str:
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "'\"":
        return token[1:-1]
    raise ValueError("a quoted string is expected")
