"""Which commands a kubeconfig would make us run, and whether they are allowed. PURE.

A kubeconfig's user may name a credential plugin (`exec.command`: aws, gke-gcloud-auth-plugin,
kubelogin...) or, in the legacy gcp auth provider, a `cmd-path`; the kubernetes client runs
either as a subprocess of the worker when it loads the credentials. A kubeconfig is data an
admin registers, so running what it names would hand command execution on the worker to
whoever can write one. Every such command must be on GPUPOSTURE_KUBECONFIG_EXEC_ALLOW, checked
over every user of the file (not only the current context's: a context is one edit away).

Allow-list entries: a bare name (`aws`) allows the command `aws`, found on PATH as the client
finds it, and the absolute path PATH resolves that name to; an entry with a slash
(`/opt/bin/kubelogin`) allows exactly that path. A bare name never allows another directory's
binary of the same name (`/tmp/x/aws`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inventory.sources.base import SourceError

SETTING = "GPUPOSTURE_KUBECONFIG_EXEC_ALLOW"
# which(name) -> the absolute path PATH resolves a bare command name to, or None.
Which = Callable[[str], str | None]


@dataclass(frozen=True)
class CredentialCommand:
    user: str
    kind: str  # "exec" or "auth-provider cmd-path"
    command: str


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def credential_commands(users: Iterable[Any]) -> list[CredentialCommand]:
    """The commands the kubeconfig's `users` entries would run (a malformed one as "")."""
    found = []
    for entry in users:
        entry = _mapping(entry)
        name, user = str(entry.get("name") or "?"), _mapping(entry.get("user"))
        if "exec" in user:
            command = _mapping(user["exec"]).get("command")
            command = command if isinstance(command, str) else ""
            found.append(CredentialCommand(name, "exec", command))
        provider = _mapping(_mapping(user.get("auth-provider")).get("config"))
        if "cmd-path" in provider:
            # As the client reads it: cmd-path is the command, or its first word when the
            # arguments are not given apart in cmd-args.
            raw = provider["cmd-path"] if isinstance(provider["cmd-path"], str) else ""
            command = raw if "cmd-args" in provider else (raw.split() or [""])[0]
            found.append(CredentialCommand(name, "auth-provider cmd-path", command))
    return found


def command_allowed(command: str, allow: Iterable[str], which: Which) -> bool:
    if not command:
        return False
    if "/" not in command:
        return command in allow
    path = posixpath.normpath(command)
    for entry in allow:
        if "/" in entry:
            if posixpath.normpath(entry) == path:
                return True
        elif posixpath.basename(path) == entry and which(entry) == path:
            return True
    return False


def refuse_unlisted_commands(users: Iterable[Any], allow: Iterable[str], which: Which) -> None:
    """SourceError (not retryable) naming the first credential command not allowed."""
    allow = tuple(allow)
    for found in credential_commands(users):
        if not command_allowed(found.command, allow, which):
            shown = repr(found.command) if found.command else "with no command"
            raise SourceError(
                f"the kubeconfig's user {found.user!r} runs a credential plugin ({found.kind}) "
                f"{shown}, which {SETTING} does not list; nothing was run. List it there (by "
                "name or full path) to allow it.",
                retryable=False,
            )
