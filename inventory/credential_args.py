"""Whether a container's `command` or `args` carries a literal credential (POD-008). PURE.

A token on the command line (`train.py --hf-token hf_…`, `sh -c "aws configure set
aws_secret_access_key … && …"`, `huggingface-cli login --token hf_…`, `AWS_SECRET_ACCESS_KEY=…
python x.py`) is in the pod spec in clear, as a literal `env[].value` is. It is judged by the
rules of inventory/credential_shapes.py and only where they are certain:

- a word of a vendor's token shape (`hf_`, `sk-`, `ghp_`, a PEM, `AccountKey=`, ...) counts
  wherever it stands, except an AWS access key id (AKIA…/ASIA…): it names a key, it is not its
  secret, and alone on a command line (`aws configure set aws_access_key_id AKIA…`) grants
  nothing; the secret beside it is what is reported;
- the value given to a flag (`--hf-token`, `--aws-secret-access-key`), to
  `aws configure set <key>`, or in a `NAME=value` assignment whose name is a variable the SDKs
  read a secret from (credential_shapes.CREDENTIAL_ENV_NAMES, `AZURE_*_KEY`) counts as that
  variable's value would; a generic flag (`--token`, `--api-key`) counts only by the value's
  shape.

References (`$(HF_TOKEN)`, which the kubelet expands from env; `$HF_TOKEN`, `${HF_TOKEN}`,
`$(cat /run/secrets/…)`, which the shell does), empty values and placeholders never count. The
value never leaves this module: a hit says where, how it was given, the rule, the length and at
most the vendor's public prefix.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from inventory.credential_shapes import (
    AZURE_KEY_NAME,
    CREDENTIAL_ENV_NAMES,
    CredentialMatch,
    facts_match,
    value_facts,
)

# Identifies a key without being its secret: quiet on a command line (see the docstring).
KEY_ID_RULE = "value:aws_access_key_id"
_ASSIGNMENT = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)", re.DOTALL)
# Words that end one shell command and start the next.
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&"})


@dataclass(frozen=True)
class ArgumentHit:
    """A credential in one element of `command` or `args`."""

    field: str  # "command" or "args"
    index: int
    given_as: str  # "--hf-token", "HF_TOKEN=", "aws configure set aws_secret_access_key", "value"
    match: CredentialMatch
    value_length: int | None  # None for a shape found across a script's words


@dataclass(frozen=True)
class _Word:
    field: str
    index: int
    text: str
    # The whole element of a script, after its words: judged by the value's shape alone (a PEM
    # or a service-account JSON has spaces in it), never as a flag or its value.
    whole: bool = False


def argument_credentials(command: tuple[str, ...], args: tuple[str, ...]) -> list[ArgumentHit]:
    """The credentials given literally in `command` then `args` (which Kubernetes appends to
    it): each word's, in order (a script may hold several); a shape found only across a
    script's words (a PEM) where none of its words held one."""
    hits: list[ArgumentHit] = []
    words = _words(command, args)
    for position, word in enumerate(words):
        hit = _judged(words, position)
        held = any((h.field, h.index) == (word.field, word.index) for h in hits)
        if hit and not (word.whole and held):
            hits.append(hit)
    return hits


def _words(command: tuple[str, ...], args: tuple[str, ...]) -> list[_Word]:
    """Every shell word of every element: an element with spaces or quotes is a script
    (`sh -c "…"`) or a quoted value, split as the shell splits it; any other is one argv word."""
    words = []
    for field, elements in (("command", command), ("args", args)):
        for index, element in enumerate(elements):
            parts = _split(element)
            words += [_Word(field, index, text) for text in parts]
            if parts != [element]:
                words.append(_Word(field, index, element, whole=True))
    return words


def _split(element: str) -> list[str]:
    if not any(c.isspace() or c in "'\"" for c in element):
        return [element]
    try:
        parts = shlex.split(element, comments=False)
    except ValueError:  # an unbalanced quote: no shell would run it, read it as words
        parts = element.split()
    return [p.rstrip(";") or p for p in parts]  # `export A=b;` ends a command


def _judged(words: list[_Word], position: int) -> ArgumentHit | None:
    word = words[position]
    if word.whole:
        hit = _given(word, "value", "", word.text)
        return hit and ArgumentHit(hit.field, hit.index, hit.given_as, hit.match, None)
    previous = words[position - 1].text if position and not words[position - 1].whole else ""
    # `--flag value`: the value is this word, given to the previous one.
    if previous.startswith("-") and "=" not in previous and not word.text.startswith("-"):
        hit = _given(word, previous, _flag_name(previous), word.text)
        if hit:
            return hit
    # `aws configure set <key> <value>`
    if position >= 4 and [w.text for w in words[position - 4 : position - 1]] == [
        "aws",
        "configure",
        "set",
    ]:
        key = previous.rsplit(".", 1)[-1]  # `profile.name.aws_secret_access_key` too
        hit = _given(word, f"aws configure set {previous}", key.upper(), word.text)
        if hit:
            return hit
    flag, sep, value = word.text.partition("=")
    if word.text.startswith("-") and sep:
        hit = _given(word, flag, _flag_name(flag), value)
        if hit:
            return hit
    assignment = _ASSIGNMENT.fullmatch(word.text)
    if assignment and not word.text.startswith("-"):
        name = assignment["name"]
        hit = _given(word, f"{name}=", name.upper(), assignment["value"])
        if hit:
            return hit
    if word.text in _SEPARATORS:
        return None
    return _given(word, "value", "", word.text)


def _flag_name(flag: str) -> str:
    """`--hf-token` -> HF_TOKEN: the variable an option of that name stands for."""
    return flag.lstrip("-").replace("-", "_").replace(".", "_").upper()


def _given(word: _Word, given_as: str, name: str, value: str) -> ArgumentHit | None:
    """`value` given under `name` (a variable name, or "" for none): a credential by the
    value's shape, or by the name where the name is one the SDKs read a secret from."""
    value = value.strip().strip("'\"")
    facts = value_facts(value)
    if facts is None:
        return None  # empty, a reference or a placeholder
    known = name in CREDENTIAL_ENV_NAMES or AZURE_KEY_NAME.fullmatch(name) is not None
    match = facts_match(name if known else "", facts)
    if match is None or match.rule == KEY_ID_RULE or match.rule.startswith("generic:"):
        return None
    if not known and not match.rule.startswith("value:"):
        return None
    return ArgumentHit(word.field, word.index, given_as, match, facts.length)
