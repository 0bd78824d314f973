"""The CEL condition of POD-003's host paths in a policy pack (enforcement.rules). PURE: strings."""

from __future__ import annotations

from posture.rules.pod.host_areas import AREAS, HOST_SYMLINKS, READ_ONLY_SAFE

# Host paths (POD-003's areas, posture.rules.pod.host_areas): a path is matched as the check
# reads it once normalised: repeated slashes and "." segments ("//dev", "/./dev"), a relative
# path taken from /, /var/run and /var/lock as the /run they link to. ".." is refused by the API
# server in a hostPath. Regexes use `[.]` for a dot: no backslash to escape in CEL.
_START = "^(?:[.]?/)*"
_SEP = "/(?:[.]?/)*"


def _segments(root: str) -> str:
    return _SEP.join(s.replace(".", "[.]") for s in root.split("/") if s)


def _within(root: str) -> str:
    return _segments(root) + "(?:/.*)?"


def _exactly(path: str) -> str:
    body = _segments(path)
    return body + "(?:/(?:[.]?/)*[.]?)?" if body else "[.]?"


def _aliases(root: str) -> list[str]:
    found = [root]
    for link, target in HOST_SYMLINKS:
        if root == target or root.startswith(target + "/"):
            found.append(link + root.removeprefix(target))
    return found


def _ancestors(root: str) -> list[str]:
    parts = [s for s in root.split("/") if s]
    return ["/" + "/".join(parts[:i]) for i in range(len(parts))]


def _regex(bodies: list[str]) -> str:
    return f"{_START}(?:{'|'.join(sorted(set(bodies)))})$"


def _host_path_regexes() -> tuple[str, str, str]:
    """(dangerous however mounted, dangerous where writable, harmless when read-only)."""
    always: list[str] = []
    writable: list[str] = []
    roots = [(r, a.writable_only) for a in AREAS for r in _aliases(a.root)]
    # /var/lock links into /run, an area of its own: the link itself lies in it.
    roots += [(link, False) for link, target in HOST_SYMLINKS if target.startswith("/run")]
    for root, writable_only in roots:
        group = writable if writable_only else always
        group.append(_within(root))
        group += [_exactly(p) for p in _ancestors(root)]
    return _regex(always), _regex(writable), _regex([_within(p) for p in READ_ONLY_SAFE])


def host_path_expression() -> str:
    always, writable, safe = _host_path_regexes()
    mounted_writable = (
        "variables.containers.exists(c, has(c.volumeMounts) && c.volumeMounts.exists(m,"
        " m.name == v.name && !(has(m.readOnly) && m.readOnly)))"
    )
    return (
        "!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath)"
        f" || (!({mounted_writable}) && v.hostPath.path.matches('{safe}'))"
        f" || !(v.hostPath.path.matches('{always}')"
        f" || (({mounted_writable}) && v.hostPath.path.matches('{writable}'))))"
    )
