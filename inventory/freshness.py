"""Whether a cluster's inventory is current enough to trust (PURE: no Django).

A cluster is stale when its last sync failed (whatever its age: the reason matters now), or
when its last good sync is older than twice its sync interval (one missed sync is a blip; two
mean nothing reads the cluster). A scheduled cluster that has never synced successfully is
judged from when it was registered: a kubeconfig that never worked, or a beat that never ran,
is as stale as a cluster that stopped. A cluster synced by hand only (interval 0, or a
snapshot with no stored file to re-read) is never stale by age."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

FAILED = "failed"
MAX_REASON = 300  # the first line of a sync error, shortened for a banner
# An absolute path on the server ("/srv/snapshots/x.json"), not the path of a URL
# ("https://h/x") or of a Kubernetes API request ("/api/v1/...", "/apis/..."): the banner is
# read by every reader of the cluster, tenant viewers too, and the server's file layout is none
# of theirs. The file's own name says which file it was.
_SERVER_PATH = re.compile(r"(?<![\w.:/~-])/(?!apis?/)(?:[\w.@+-]+/)+(?=[\w.@+-])")


@dataclass(frozen=True)
class Freshness:
    stale: bool
    failed: bool  # the last finished sync failed
    age_seconds: float | None  # since the last good sync finished; None: never
    reason: str  # why it is stale, in words; "" when fresh


def cluster_freshness(
    *,
    now: datetime,
    interval_minutes: int,
    last_good_at: datetime | None,
    last_status: str | None,
    last_error: str = "",
    registered_at: datetime | None = None,
) -> Freshness:
    """`interval_minutes`: the scheduled interval, 0 for manual syncs only. `last_status`
    and `last_error`: of the newest finished sync run (None: none finished yet).
    `registered_at`: when the cluster was created, the clock of a cluster never read."""
    age = (now - last_good_at).total_seconds() if last_good_at else None
    if last_status == FAILED:
        first_line = (last_error or "no reason recorded").strip().splitlines()[0].rstrip(".")
        first_line = _SERVER_PATH.sub("", first_line)
        return Freshness(True, True, age, f"the last sync failed: {first_line[:MAX_REASON]}")
    expected = f"(expected every {interval_minutes} min)"
    if interval_minutes > 0 and age is not None and age > 2 * interval_minutes * 60:
        return Freshness(True, False, age, f"no successful sync for {age_words(age)} {expected}")
    # Never read: its age counts from registration (the age itself stays None: no good sync).
    waited = (now - registered_at).total_seconds() if registered_at and age is None else None
    if interval_minutes > 0 and waited is not None and waited > 2 * interval_minutes * 60:
        return Freshness(
            True,
            False,
            None,
            f"never synced successfully since it was registered {age_words(waited)} ago {expected}",
        )
    return Freshness(False, False, age, "")


def age_words(seconds: float) -> str:
    """A duration as a person says it: 45 s, 12 min, 5 h, 3 d."""
    if seconds < 90:
        return f"{int(seconds)} s"
    if seconds < 90 * 60:
        return f"{int(seconds // 60)} min"
    if seconds < 48 * 3600:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} d"
