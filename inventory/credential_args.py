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
from urllib.parse import parse_qs, quote, urlencode

from inventory.credential_shapes import (
    AZURE_KEY_NAME,
    CREDENTIAL_ENV_NAMES,
    CredentialMatch,
    facts_match,
    value_facts,
)

# The shortest value a vendor's token shape matches (credential_shapes.VALUE_SHAPES: an AWS
# access key id, AKIA and 16 more; the others are longer). A shorter word under no credential
# name is judged without reading it further: the sync seals every pod's command line.
SHORTEST_SHAPE = 20
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
    script's words (a PEM) where none of its words held one. A credential the sync sealed
    (seal_arguments) is the same hit it was before."""
    return [hit for hit, _ in _judged_values(command, args)]


def _judged_values(
    command: tuple[str, ...], args: tuple[str, ...]
) -> list[tuple[ArgumentHit, str]]:
    """Each hit with the text judged as its value (the secret: it stays in this module)."""
    hits: list[tuple[ArgumentHit, str]] = []
    words = _words(command, args)
    for position, word in enumerate(words):
        found = _judged(words, position)
        held = any((h.field, h.index) == (word.field, word.index) for h, _ in hits)
        if found and not (word.whole and held):
            hits.append(found)
    return hits


# A sealed credential in a stored `command`/`args` element: one shell word (no space, no
# quote), so a script keeps its words, holding what POD-008 reports and never the value.
SEALED_PREFIX = "<credential-not-stored:"
_SEALED = re.compile(re.escape(SEALED_PREFIX) + r"(?P<facts>[^\s'\"<>]*)>")


def seal_arguments(
    command: tuple[str, ...], args: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`command` and `args` as the sync stores them: in each element a credential would be
    reported in, the secret text is replaced by a sealed marker (SEALED_PREFIX) keeping how it
    was given, the rule, its kind, the vendor's public prefix and the length; every other
    character of the element (the rest of a `sh -c` script) is kept as given."""
    elements = {"command": list(command), "args": list(args)}
    for hit, value in _judged_values(command, args):
        if _SEALED.fullmatch(value):
            continue  # sealed already
        element = elements[hit.field][hit.index]
        secret = _secret_span(value) if hit.value_length is None else value
        marker = _marker(hit)
        # The value as the shell read it is in the element unless escapes changed it: then the
        # whole element goes, never the secret.
        elements[hit.field][hit.index] = (
            element.replace(secret, marker) if secret and secret in element else marker
        )
    return tuple(elements["command"]), tuple(elements["args"])


# A private key block, or a JSON object (a service-account key): the secret part of a script
# element judged as a whole.
_PEM_BLOCK = re.compile(
    r"-----BEGIN[^-]*PRIVATE KEY-----.*?(?:-----END[^-]*PRIVATE KEY-----|$)", re.S
)
_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


def _secret_span(value: str) -> str:
    found = _PEM_BLOCK.search(value) or _JSON_OBJECT.search(value)
    return found.group(0) if found else value


def _marker(hit: ArgumentHit) -> str:
    facts = {
        "as": hit.given_as,
        "rule": hit.match.rule,
        "kind": hit.match.what,
        "hint": hit.match.hint,
        "example": hit.match.example,
        "length": hit.value_length,
    }
    kept = {k: v for k, v in facts.items() if v is not None}
    return f"{SEALED_PREFIX}{urlencode(kept, quote_via=quote, safe='')}>"


def _unsealed(word: _Word, value: str) -> ArgumentHit | None:
    """The hit a sealed marker stands for, None for any other value."""
    found = _SEALED.fullmatch(value)
    if found is None:
        return None
    facts = {k: v[0] for k, v in parse_qs(found["facts"], keep_blank_values=True).items()}
    match = CredentialMatch(
        facts.get("rule", ""), facts.get("kind", ""), facts.get("hint"), facts.get("example")
    )
    length = int(facts["length"]) if facts.get("length", "").isdigit() else None
    return ArgumentHit(word.field, word.index, facts.get("as", "value"), match, length)


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


def _judged(words: list[_Word], position: int) -> tuple[ArgumentHit, str] | None:
    word = words[position]
    if word.whole:
        found = _given(word, "value", "", word.text)
        if found is None or found[0].value_length is None:
            return found  # none, or a marker sealed whole
        hit = found[0]
        return ArgumentHit(hit.field, hit.index, hit.given_as, hit.match, None), found[1]
    previous = words[position - 1].text if position and not words[position - 1].whole else ""
    # `--flag value`: the value is this word, given to the previous one.
    if previous.startswith("-") and "=" not in previous and not word.text.startswith("-"):
        given = _given(word, previous, _flag_name(previous), word.text)
        if given:
            return given
    # `aws configure set <key> <value>`
    if position >= 4 and [w.text for w in words[position - 4 : position - 1]] == [
        "aws",
        "configure",
        "set",
    ]:
        key = previous.rsplit(".", 1)[-1]  # `profile.name.aws_secret_access_key` too
        given = _given(word, f"aws configure set {previous}", key.upper(), word.text)
        if given:
            return given
    flag, sep, value = word.text.partition("=")
    if word.text.startswith("-") and sep:
        given = _given(word, flag, _flag_name(flag), value)
        if given:
            return given
    assignment = _ASSIGNMENT.fullmatch(word.text)
    if assignment and not word.text.startswith("-"):
        name = assignment["name"]
        given = _given(word, f"{name}=", name.upper(), assignment["value"])
        if given:
            return given
    if word.text in _SEPARATORS:
        return None
    return _given(word, "value", "", word.text)


def _flag_name(flag: str) -> str:
    """`--hf-token` -> HF_TOKEN: the variable an option of that name stands for."""
    return flag.lstrip("-").replace("-", "_").replace(".", "_").upper()


def _given(word: _Word, given_as: str, name: str, value: str) -> tuple[ArgumentHit, str] | None:
    """`value` given under `name` (a variable name, or "" for none): a credential by the
    value's shape, or by the name where the name is one the SDKs read a secret from; a sealed
    marker as the hit it stands for. With the value judged."""
    value = value.strip().strip("'\"")
    sealed = _unsealed(word, value)
    if sealed is not None:
        return sealed, value
    known = name in CREDENTIAL_ENV_NAMES or AZURE_KEY_NAME.fullmatch(name) is not None
    if not known and len(value) < SHORTEST_SHAPE:
        return None  # most words of a command line: no vendor's token is this short
    facts = value_facts(value)
    if facts is None:
        return None  # empty, a reference or a placeholder
    match = facts_match(name if known else "", facts)
    if match is None or match.rule == KEY_ID_RULE or match.rule.startswith("generic:"):
        return None
    if not known and not match.rule.startswith("value:"):
        return None
    return ArgumentHit(word.field, word.index, given_as, match, facts.length), value
