"""The container logs between the JSON documents of `kubectl cluster-info dump` printed to
stdout (no --output-directory). PURE.

After each namespace's PodList, kubectl prints every container's log as
`==== START logs for container C of pod NS/P ====` on its own line, the log as the kubelet
sent it (not always ending in a newline, so the END can follow the last line's text), then
`==== END logs for container C of pod NS/P ====` and a newline (kubectl's
pkg/cmd/clusterinfo/clusterinfo_dump.go). A log is whatever the container printed: braces,
JSON, a line that looks like a marker. So a block is skipped from its START line to the END
line of the same container and pod, never by guessing where JSON starts again; and where that
END line is printed more than once (a container printing it, on purpose or not), which lines
are log and which are objects cannot be told: the file is refused rather than read a tenant's
log as Kubernetes objects.
"""

from __future__ import annotations

import re
from collections import Counter

from gpuposture.base.safe_parse import SafeParseError

# Container, namespace and pod names are DNS labels and subdomains: never a space or a `/`.
_START = re.compile(
    r"==== START logs for container (?P<container>\S+) of pod (?P<pod>[^\s/]+/\S+) ====(?:\r?\n|\Z)"
)
# A line end (PowerShell's `>` writes CRLF) or the end of the file follows an END marker;
# inside a JSON string a newline is always escaped, so no object's text matches.
_END = re.compile(r"==== END logs for container \S+ of pod [^\s/]+/\S+ ====(?=\r?\n|\Z)")


class LogBlocks:
    """`skip` for load_json_values over one file: where a log block starting at `at` ends."""

    def __init__(self) -> None:
        self._ends: Counter[str] | None = None  # every END marker in the file, counted once

    def __call__(self, text: str, at: int) -> int:
        start = _START.match(text, at)
        if start is None:
            return at
        end = f"==== END logs for container {start['container']} of pod {start['pod']} ===="
        line = text.count("\n", 0, at) + 1
        where = f"line {line}: the logs of container {start['container']} of pod {start['pod']}"
        if self._ends is None:
            self._ends = Counter(match.group() for match in _END.finditer(text))
        if not self._ends[end]:
            raise SafeParseError(f"{where} start but never end (`{end}` is missing)")
        if self._ends[end] > 1:
            raise SafeParseError(
                f"{where} end {self._ends[end]} times (`{end}`): a container printed the "
                "dump's own END line, so which lines are log and which are objects cannot be "
                "told; dump with `--output-directory`, which writes each pod's logs to a "
                "file of its own that is never read"
            )
        found = _END.search(text, start.end())
        while found is not None and found.group() != end:
            found = _END.search(text, found.end())
        if found is None:  # its one END line comes before its START: not a block
            raise SafeParseError(f"{where} start after their END line (`{end}`)")
        return found.end()
