"""Which literal environment values the sync keeps. PURE.

Tenants paste secrets into `env[].value` (POD-008 exists for that); the product must judge them
without storing them. Only the values a check reads (the NVIDIA container runtime's and device
plugin's own variables, which carry device lists and switches, never secrets) are kept, and only
when they do not look like a credential; every other non-empty literal is sealed: its value is
replaced by SEALED_VALUE, and its length and the credential rule it matches (computed here, once,
from the real value) are kept instead."""

from __future__ import annotations

import functools
import re
import shlex
from typing import Any

from inventory.credential_args import SEALED_PREFIX, seal_arguments
from inventory.credential_shapes import credential_match, value_facts
from inventory.snapshot import EnvVar

SEALED_VALUE = "<literal value not stored>"

# Variables whose values checks and inventory read (POD-011, the MIG capability mounts, the
# toolkit's and device plugin's settings as their pods carry them).
VALUE_READ = frozenset(
    {
        "NVIDIA_VISIBLE_DEVICES",
        # Their AMD and Intel Gaudi counterparts (POD-011 on those vendors' nodes).
        "AMD_VISIBLE_DEVICES",
        "HABANA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
        "NVIDIA_MIG_CONFIG_DEVICES",
        "NVIDIA_MIG_MONITOR_DEVICES",
        "NVIDIA_RUNTIME_SET_AS_DEFAULT",
        "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED",
        "DEVICE_LIST_STRATEGY",
        # Cloud identities the federation webhooks write into pods (IRSA, Azure Workload
        # Identity): a role ARN or client id names a principal and is no secret (POD-010).
        "AWS_ROLE_ARN",
        "AZURE_CLIENT_ID",
        # The address a Gradio or Streamlit server listens on (K8S-006): an address, no secret.
        "GRADIO_SERVER_NAME",
        "STREAMLIT_SERVER_ADDRESS",
    }
)


# Generic names read for the device plugin (its MIG strategy, its config-manager's DEFAULT_CONFIG:
# the config key an unlabelled node reads, the CONFIG_FILE it reads with no config-manager):
# kept only in their own shape, a word, a ConfigMap key or an absolute path, so a tenant app's
# variable of the same name is sealed like any other.
VALUE_READ_SHAPED = {
    "MIG_STRATEGY": re.compile(r"(?i)none|single|mixed"),
    "DEFAULT_CONFIG": re.compile(r"[-._A-Za-z0-9]{1,253}"),
    "CONFIG_FILE": re.compile(r"/[-._/A-Za-z0-9]{1,1023}"),
    # K8S-006: Ray's authentication mode (a word) and the directory Jupyter reads its
    # configuration files from (an absolute path).
    "RAY_AUTH_MODE": re.compile(r"[a-z]{1,16}"),
    "JUPYTER_CONFIG_DIR": re.compile(r"/[-._/A-Za-z0-9]{1,1023}"),
    # K8S-006's GPU web UIs and inference APIs: Open WebUI's login switch (a word), where Ollama
    # and Open WebUI listen (an address, a port number).
    "WEBUI_AUTH": re.compile(r"[A-Za-z0-9]{1,8}"),
    "OLLAMA_HOST": re.compile(r"(https?://)?[-.:\[\]A-Za-z0-9]{0,253}"),
    "HOST": re.compile(r"[-.:\[\]A-Za-z0-9]{1,253}"),
    "PORT": re.compile(r"[0-9]{1,5}"),
    # The port an NVIDIA NIM serves its HTTP API on (a port number).
    "NIM_SERVER_PORT": re.compile(r"[0-9]{1,5}"),
    "NIM_HTTP_API_PORT": re.compile(r"[0-9]{1,5}"),
    # Knative's queue-proxy: the ports it serves on and the user container's port it
    # forwards to (port numbers); net-kourier's external authorizer (an address).
    "QUEUE_SERVING_PORT": re.compile(r"[0-9]{1,5}"),
    "QUEUE_SERVING_TLS_PORT": re.compile(r"[0-9]{1,5}"),
    "USER_PORT": re.compile(r"[0-9]{1,5}"),
    "KOURIER_EXTAUTHZ_HOST": re.compile(r"[-.:\[\]A-Za-z0-9]{1,253}"),
}


# Command lines a server reads from its env (the Jupyter Docker Stacks' start script appends
# NOTEBOOK_ARGS to `jupyter lab`; K8S-006 reads it): kept with the value of every option that
# may hold a secret reduced to whether it is empty.
ARGS_READ = frozenset({"NOTEBOOK_ARGS"})
_SECRET_OPTION = re.compile(r"token|password|secret|key|cookie", re.IGNORECASE)
REDACTED = "<set>"


def redact_args(value: str) -> str:
    """`value` as shell words, each secret-looking option's non-empty value replaced."""
    try:
        words = shlex.split(value)
    except ValueError:
        words = value.split()
    kept: list[str] = []
    for i, word in enumerate(words):
        previous = words[i - 1] if i else ""
        name, sep, given = word.partition("=")
        if word.startswith("-") and sep and _SECRET_OPTION.search(name):
            word = f"{name}={REDACTED}" if given not in ("", "''", '""') else f"{name}="
        elif previous.startswith("-") and "=" not in previous and _SECRET_OPTION.search(previous):
            word = REDACTED if word not in ("", "''", '""') else ""
        kept.append(word)
    return shlex.join(kept)


@functools.lru_cache(maxsize=8192)
def literal_env(name: str, value: str) -> EnvVar:
    """The EnvVar the sync stores for a literal `name=value`."""
    match = credential_match(name, value)
    if name in ARGS_READ and match is None:
        return EnvVar(name=name, value=redact_args(value))
    shaped = name in VALUE_READ_SHAPED and VALUE_READ_SHAPED[name].fullmatch(value) is not None
    if value == "" or ((name in VALUE_READ or shaped) and match is None):
        return EnvVar(name=name, value=value)
    return EnvVar(
        name=name,
        value=SEALED_VALUE,
        length=len(value),
        credential_rule=match.rule if match else None,
        credential_kind=match.what if match else None,
        credential_hint=match.hint if match else None,
        credential_example=match.example if match else None,
    )


def seal_stored_env(var: dict) -> dict:
    """The stored (JSON) form of one env entry, sealed if it still holds a literal value: for
    data written before the sync sealed values."""
    value = var.get("value")
    if value is None or value == SEALED_VALUE or var.get("length") is not None:
        return var
    return {**var, **_as_dict(literal_env(str(var.get("name") or ""), str(value)))}


def _as_dict(env: EnvVar) -> dict:
    return {
        "value": env.value,
        "length": env.length,
        "credential_rule": env.credential_rule,
        "credential_kind": env.credential_kind,
        "credential_hint": env.credential_hint,
        "credential_example": env.credential_example,
    }


# Pure and called once per container of every pod: the replicas of a workload repeat the same
# command line and env, so a sync of 40,000 pods judges each distinct one once.
@functools.lru_cache(maxsize=8192)
def stored_arguments(
    command: tuple[str, ...], args: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A container's `command` and `args` as the sync stores them: each credential POD-008
    reports sealed in place (credential_args.seal_arguments), and the value of each option
    that may hold a secret (`--NotebookApp.token=...`, `--password x`) replaced by REDACTED,
    so K8S-006 still tells a token set from an empty one. Every other word is kept as given
    (the checks read listening addresses, config files and device plugin flags)."""
    command, args = seal_arguments(command, args)
    return _redacted(command), _redacted(args)


def _redacted(elements: tuple[str, ...]) -> tuple[str, ...]:
    kept = _redacted_words(list(elements))
    return tuple(
        _redacted_script(e) if k == e and _is_script(e) else k
        for e, k in zip(elements, kept, strict=True)
    )


def _is_script(element: str) -> bool:
    return any(c.isspace() or c in "'\"" for c in element)


def _redacted_script(element: str) -> str:
    """A `sh -c` script with its secret options' values replaced in place, the rest as given."""
    try:
        words = shlex.split(element)
    except ValueError:
        words = element.split()
    for word, kept in zip(words, _redacted_words(words), strict=True):
        if kept != word:
            # Where the shell's quoting hides the word, the script is written out again.
            element = (
                element.replace(word, kept)
                if word in element
                else shlex.join(_redacted_words(words))
            )
    return element


def _redacted_words(words: list[str]) -> list[str]:
    kept: list[str] = []
    for i, word in enumerate(words):
        previous = words[i - 1] if i else ""
        name, sep, given = word.partition("=")
        if word.startswith("-") and sep and _SECRET_OPTION.search(name) and _secret(given):
            word = f"{name}={REDACTED}"
        elif previous.startswith("-") and "=" not in previous and _SECRET_OPTION.search(previous):
            # A script's `;` after the value ends the command: it stays.
            end = word[len(word.rstrip(";")) :]
            word = REDACTED + end if _secret(word.rstrip(";")) else word
        kept.append(word)
    return kept


def _secret(value: str) -> bool:
    """A value that may be a secret: not empty, no reference, placeholder or sealed marker
    (value_facts), no absolute path (a file the secret is in, which checks read)."""
    sealed = SEALED_PREFIX in value
    return not sealed and value_facts(value) is not None and not value.startswith("/")


def seal_stored_arguments(data: Any) -> Any:
    """Stored JSON (a pod, a workload's template, a drift record) with every container's
    `command` and `args` sealed as the sync seals them now: for rows written before it did."""
    if isinstance(data, list):
        return [seal_stored_arguments(item) for item in data]
    if not isinstance(data, dict):
        return data
    found = {key: seal_stored_arguments(value) for key, value in data.items()}
    lines = [found.get(key) for key in ("command", "args")]
    if any(lines) and all(_words_list(line) for line in lines):
        command, args = stored_arguments(tuple(lines[0] or ()), tuple(lines[1] or ()))
        found.update({k: list(v) for k, v in (("command", command), ("args", args)) if k in data})
    return found


def _words_list(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value))
