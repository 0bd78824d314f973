"""Whether an environment variable's literal value is a credential (POD-008). PURE.

Judged by the value's shape first (a vendor's token format, a service-account JSON, a private
key, an Azure connection string), then by the name: the variables the cloud and ML-platform SDKs
read a secret from count with any real value long enough to be the key the vendor issues (one
whose secret a person chooses, a `*_PASSWORD` or AWS_SECRET_ACCESS_KEY, with any real value);
a generic `*_API_KEY`, `*_TOKEN` or `*_SECRET` counts only with a random-looking value.
Placeholders ("changeme", "${VAR}", "$(VAR)", "<your key>", "xxxx", "...") never count. A
vendor's documented example key (AWS's `...EXAMPLE` key id and `...EXAMPLEKEY` secret) is judged
like any value and the match says it is the example: a literal secret in a pod's env is the
practice POD-008 reports, whatever its value. The value never leaves this module: a match says
which rule fired and, at most, the vendor's public prefix.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class CredentialMatch:
    rule: str  # "value:<shape>", "name:<NAME>", "name:AZURE_*_KEY", "generic:<suffix>"
    what: str  # what kind of credential, for people
    hint: str | None = None  # the public prefix ("hf_…"), never a secret character
    # The vendor whose documented example value this is ("AWS"), None for any other value.
    example: str | None = None


# A GCP service-account key file pasted into a variable (GOOGLE_APPLICATION_CREDENTIALS holding
# the JSON itself rather than its path): both markers must be there.
GCP_KEY_TYPE = re.compile(r'"type"\s*:\s*"service_account"')
GCP_KEY_FIELD = '"private_key"'
# (shape, what, pattern); the group "prefix" is the public part shown as the hint. Most specific
# first: sk-ant- before the OpenAI-style sk-.
_NOT_AFTER = r"(?<![A-Za-z0-9])"
VALUE_SHAPES = tuple(
    (shape, what, re.compile(pattern))
    for shape, what, pattern in (
        (
            "private_key_pem",
            "private key (PEM)",
            r"(?P<prefix>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----)",
        ),
        (
            "azure_connection_string",
            "Azure connection string with its account key",
            r"(?i)(?P<prefix>(?:AccountKey|SharedAccessKey)=)[A-Za-z0-9+/]{20,}",
        ),
        (
            "aws_access_key_id",
            "AWS access key id",
            r"(?<![A-Z0-9])(?P<prefix>AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}(?![A-Z0-9])",
        ),
        (
            "anthropic_api_key",
            "Anthropic API key",
            _NOT_AFTER + r"(?P<prefix>sk-ant-)[a-z]+[0-9]*-[A-Za-z0-9_-]{20,}",
        ),
        (
            "openai_api_key",
            "OpenAI-style API key",
            _NOT_AFTER + r"(?P<prefix>sk-(?:proj-|svcacct-|admin-)?)[A-Za-z0-9_-]{32,}",
        ),
        (
            "hugging_face_token",
            "Hugging Face token",
            _NOT_AFTER + r"(?P<prefix>hf_)[A-Za-z0-9]{30,}",
        ),
        (
            "github_token",
            "GitHub token",
            _NOT_AFTER + r"(?P<prefix>gh[pousr]_|github_pat_)[A-Za-z0-9_]{36,}",
        ),
        ("gitlab_token", "GitLab token", _NOT_AFTER + r"(?P<prefix>glpat-)[A-Za-z0-9_-]{20,}"),
        (
            "slack_token",
            "Slack token",
            _NOT_AFTER + r"(?P<prefix>xox[abposr]-|xapp-)[A-Za-z0-9-]{10,}",
        ),
        (
            "slack_webhook",
            "Slack incoming webhook",
            r"(?P<prefix>https://hooks\.slack\.com/)(?:services|workflows|triggers)/\S{20,}",
        ),
        (
            "nvidia_api_key",
            "NVIDIA NGC / API catalog key",
            _NOT_AFTER + r"(?P<prefix>nvapi-)[A-Za-z0-9_-]{40,}",
        ),
        ("google_api_key", "Google API key", _NOT_AFTER + r"(?P<prefix>AIza)[0-9A-Za-z_-]{35}"),
    )
)
# The variables the SDKs read a long-lived secret from: any real value that may be one counts
# (name_rule_holds). Upper case.
# GOOGLE_APPLICATION_CREDENTIALS is a file path: only a literal JSON in it counts (by shape).
CREDENTIAL_ENV_NAMES = frozenset(
    [
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AZURE_CLIENT_SECRET",
        "AZURE_CLIENT_CERTIFICATE_PASSWORD",
        "AZURE_STORAGE_CONNECTION_STRING",
        "AZURE_STORAGE_SAS_TOKEN",
        "GOOGLE_APPLICATION_CREDENTIALS_JSON",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
        "OCI_CLI_KEY_CONTENT",
        "DIGITALOCEAN_ACCESS_TOKEN",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "COHERE_API_KEY",
        "MISTRAL_API_KEY",
        "GROQ_API_KEY",
        "TOGETHER_API_KEY",
        "REPLICATE_API_TOKEN",
        "HF_TOKEN",
        "HF_API_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HUGGINGFACE_TOKEN",
        "HUGGINGFACEHUB_API_TOKEN",
        "WANDB_API_KEY",
        "NGC_API_KEY",
        "NVIDIA_API_KEY",
        "KAGGLE_KEY",
        "COMET_API_KEY",
        "NEPTUNE_API_TOKEN",
        "MLFLOW_TRACKING_PASSWORD",
        "MLFLOW_TRACKING_TOKEN",
        "DATABRICKS_TOKEN",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GITLAB_TOKEN",
        "SLACK_BOT_TOKEN",
        "SLACK_TOKEN",
    ]
)
AZURE_KEY_NAME = re.compile(r"AZURE_[A-Z0-9_]*KEY")  # AZURE_STORAGE_KEY, AZURE_OPENAI_API_KEY
# A value under one of those names counts only if it could be the credential the vendor issues,
# and none of them issues one this short. The shortest documented formats: a GitLab token
# `glpat-` + 20 (26), an Alibaba Cloud AccessKey secret (30), a Kaggle key, a Mistral key or an
# Azure OpenAI / AI services key (32 hex), a Databricks token `dapi` + 32 (36), a Hugging Face
# token `hf_` + 34 (37), a Google / Gemini API key `AIza` + 35 (39), an AWS secret access key,
# a W&B key, a GitHub token, a Cohere key, a Replicate token `r8_` + 37 (40), an Azure
# client secret (~40), an OpenAI, Anthropic, Groq, NGC or DigitalOcean key (50 to 100+), an
# AWS session token, a SAS token, a storage key (88) or a PEM (hundreds). 16 leaves room for a
# format shorter than any of these, and is where looks_random starts: below it a value reads
# as a word, a branch or a mode (`HF_TOKEN=main`, `WANDB_API_KEY=offline`), never a key.
ISSUED_MIN_LENGTH = 16
# Names whose secret a person sets, not a vendor: any `*_PASSWORD`, and AWS_SECRET_ACCESS_KEY,
# which S3-compatible stores take too with the secret their operator chose (MinIO's needs 8
# characters; Kubeflow Pipelines ships `minio123`). Any real value of them counts.
USER_CHOSEN_NAMES = frozenset({"AWS_SECRET_ACCESS_KEY"})
GENERIC_SUFFIXES = ("API_KEY", "APIKEY", "TOKEN", "SECRET", "SECRET_KEY", "PRIVATE_KEY")
WANDB_KEY = re.compile(r"[0-9a-f]{40}")
# The example keys a vendor's documentation prints (AWS: a 20-character key id ending in
# EXAMPLE, a 40-character secret ending in EXAMPLEKEY). Copied into manifests they are still
# literal secrets in a pod spec; only the evidence says what they are.
DOCUMENTED_EXAMPLES = (
    ("AWS", re.compile(r"(?:AKIA|ASIA)[A-Z0-9]{9}EXAMPLE")),
    ("AWS", re.compile(r"[A-Za-z0-9/+]{30}EXAMPLEKEY")),
)
# Placeholders: references and template syntax, masks, and the words people leave in samples.
_REFERENCE = re.compile(r"\$\{|\$\(|\{\{|^\$[A-Za-z_]|^<.*>$|^%[A-Za-z_]+%$")
_MASK = re.compile(r"(.)\1*$|.*(?:[xX]{5}|\*{3}|\.\.\.|…)")
_PLACEHOLDER_WORDS = tuple(
    [
        "changeme",
        "changeit",
        "replaceme",
        "placeholder",
        "example",
        "dummy",
        "redacted",
        "insert",
        "yourapikey",
        "yourtoken",
        "yoursecret",
        "yourkey",
    ]
)
_PLACEHOLDER_VALUES = frozenset(
    [
        # What local OpenAI-compatible servers (llama.cpp, LocalAI) document for "no key":
        # the SDK insists on some OPENAI_API_KEY, the server reads none. The whole value only:
        # a real key that starts with the phrase is still a key.
        "sknokeyrequired",
        "nokeyrequired",
        "nokeyneeded",
        "secret",
        "password",
        "token",
        "apikey",
        "key",
        "test",
        "testing",
        "todo",
        "tbd",
        "none",
        "null",
        "nil",
        "undefined",
        "empty",
        "unset",
        "notset",
        "default",
        "disabled",
        "false",
        "true",
        "na",
        "value",
        "string",
        "demo",
        "local",
        "dev",
    ]
)


def is_placeholder(value: str) -> bool:
    """An empty, templated, masked or sample value: no credential whatever the name."""
    text = value.strip()
    if not text or _REFERENCE.search(text) or _MASK.match(text):
        return True
    folded = re.sub(r"[^a-z0-9]", "", text.lower())
    return (
        folded in _PLACEHOLDER_VALUES
        or folded.startswith("your")
        or any(word in folded for word in _PLACEHOLDER_WORDS)
    )


def looks_random(value: str) -> bool:
    """A value that reads as a generated secret rather than a name, path, URL or sentence:
    at least 16 characters without spaces, letters with digits or both cases, mostly not
    lower-case words ("kafka-consumer-token-v2" is a name), and not too repetitive."""
    text = value.strip()
    if len(text) < 16 or any(c.isspace() for c in text) or "://" in text:
        return False
    if text.startswith(("/", "~", "./")):
        return False
    letters = [c for c in text if c.isalpha()]
    mixed = any(c.isdigit() for c in text) or (
        any(c.islower() for c in letters) and any(c.isupper() for c in letters)
    )
    if not letters or not mixed:
        return False
    parts = [p for p in re.split(r"[-_.:/@]", text) if p]
    wordy = sum(len(p) for p in parts if (p.isalpha() and p.islower()) or len(p) <= 4)
    return wordy * 2 < len(text) and _entropy(text) >= 3.0


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def documented_example(value: str) -> str | None:
    """The vendor whose documentation prints this exact example key, if any."""
    text = value.strip()
    return next((vendor for vendor, shape in DOCUMENTED_EXAMPLES if shape.fullmatch(text)), None)


def credential_match(name: str, value: str | None) -> CredentialMatch | None:
    """The rule a literal `name=value` matches, or None (a reference, empty or placeholder).
    A vendor's documented example is no placeholder: it matches as any value would, marked."""
    if value is None:
        return None
    facts = value_facts(value)
    return None if facts is None else facts_match(name, facts)


@dataclass(frozen=True)
class ValueFacts:
    """What the rules need to know of a value, without the value: enough to judge it under any
    variable name later (a ConfigMap key becomes a variable of a name the pod chooses:
    `configMapKeyRef`, or `envFrom` with its prefix). No character of the value but the
    vendor's public prefix (`hint`) is in it."""

    length: int
    shape: str | None = None  # "value:<shape>" when the value has a vendor's token shape
    what: str = ""
    hint: str | None = None
    example: str | None = None  # the vendor whose documented example this is
    hex40: bool = False  # a Weights & Biases key's shape (judged with the name)
    path: bool = False  # a path to a mounted secret, not the secret
    random: bool = False  # looks_random: a generated secret under a generic name

    def as_dict(self) -> dict[str, Any]:
        """The stored (JSON) form: only the facts that are set."""
        found = {f.name: getattr(self, f.name) for f in fields(self)}
        return {k: v for k, v in found.items() if v not in (None, False, "")}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ValueFacts:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def value_facts(value: str) -> ValueFacts | None:
    """The facts of `value`, or None where it is no credential whatever the name (empty, a
    reference or a placeholder; a vendor's documented example is none of these)."""
    example = documented_example(value)
    if example is None and is_placeholder(value):
        return None
    shape = _shape_match(value)
    text = value.strip()
    return ValueFacts(
        length=len(text),  # padding makes no short value a key's length
        shape=shape.rule if shape else None,
        what=shape.what if shape else "",
        hint=shape.hint if shape else None,
        example=example,
        hex40=WANDB_KEY.fullmatch(text) is not None,
        path=text.startswith("/"),
        random=looks_random(value),
    )


def facts_match(name: str, facts: ValueFacts) -> CredentialMatch | None:
    """The rule a variable `name` holding a value of these facts matches, or None."""
    match = _rule_match(name, facts)
    return replace(match, example=facts.example) if match and facts.example else match


def _shape_match(value: str) -> CredentialMatch | None:
    """A vendor's token shape, a service-account JSON or a private key, whatever the name."""
    if GCP_KEY_TYPE.search(value) and GCP_KEY_FIELD in value:
        return CredentialMatch("value:gcp_service_account_json", "GCP service-account key")
    for shape, what, pattern in VALUE_SHAPES:
        found = pattern.search(value)
        if found:
            return CredentialMatch(f"value:{shape}", what, f"{found['prefix']}…")
    return None


def name_rule_holds(name: str, length: int | None) -> bool:
    """Whether a real value of `length` characters under a credential variable `name` may be
    that credential: a secret a person chose (`*_PASSWORD`, USER_CHOSEN_NAMES) may be of any
    length; a key a vendor issues is at least ISSUED_MIN_LENGTH long. An unknown length may
    be either."""
    key = name.strip().upper()
    if length is None or key.endswith("PASSWORD") or key in USER_CHOSEN_NAMES:
        return True
    return length >= ISSUED_MIN_LENGTH


def _rule_match(name: str, facts: ValueFacts) -> CredentialMatch | None:
    if facts.shape:
        return CredentialMatch(facts.shape, facts.what, facts.hint)
    key = name.strip().upper()
    if "WANDB" in key and facts.hex40:
        return CredentialMatch("value:wandb_api_key", "Weights & Biases API key")
    if facts.path:
        return None  # a path to a mounted secret, not the secret
    could_be = name_rule_holds(key, facts.length)
    if key in CREDENTIAL_ENV_NAMES and could_be:
        return CredentialMatch(f"name:{key}", "a variable SDKs read a secret from")
    if AZURE_KEY_NAME.fullmatch(key) and could_be:
        return CredentialMatch("name:AZURE_*_KEY", "Azure key")
    suffix = next((s for s in GENERIC_SUFFIXES if key == s or key.endswith("_" + s)), None)
    if suffix and facts.random:
        return CredentialMatch(f"generic:*_{suffix}", "random-looking secret")
    return None
