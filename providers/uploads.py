"""What an evidence upload really is, from its bytes, not its name or claimed type. PURE.

Only document and image types a reviewer opens safely are accepted: PDF, PNG, JPEG and plain
text (also CSV and JSON). HTML, SVG and anything executable are refused: served back from our
origin they could run script in a reviewer's session.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ALLOWED = {
    "application/pdf": ".pdf",
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "text/plain": ".txt",
    "text/csv": ".csv",
    "application/json": ".json",
}
TEXT_TYPES = ("text/plain", "text/csv", "application/json")
_MARKUP = re.compile(rb"<\s*(script|html|svg|iframe|object|embed|!doctype)", re.IGNORECASE)
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._ -]+")


class UploadRefused(ValueError):
    """The file is not accepted; the message says why."""


@dataclass(frozen=True)
class UploadCheck:
    content_type: str
    extension: str
    display_name: str


def sniff(head: bytes) -> str | None:
    """The content type the first bytes prove, or None."""
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if b"\x00" in head:
        return None
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the end of the sample is still text.
        if exc.start < len(head) - 3:
            return None
    return "text/plain"


def check_upload(
    name: str, claimed_type: str, head: bytes, size: int, max_bytes: int
) -> UploadCheck:
    """Accept or refuse a file from its name, claimed type, first bytes (>= 2 KiB when the file
    is that long) and size."""
    if size <= 0:
        raise UploadRefused("the file is empty")
    if size > max_bytes:
        raise UploadRefused(f"the file is {size:,} bytes; the limit is {max_bytes:,}")
    found = sniff(head)
    if found is None:
        raise UploadRefused(
            "only PDF, PNG, JPEG and plain-text files (txt, csv, json) are accepted"
        )
    claimed = (claimed_type or "").split(";")[0].strip().lower()
    if found == "text/plain":
        if _MARKUP.search(head):
            raise UploadRefused("HTML or SVG markup is not accepted; attach a PDF instead")
        if claimed in TEXT_TYPES:
            found = claimed
    elif claimed and claimed != found and claimed != "application/octet-stream":
        raise UploadRefused(f"the file says it is {claimed} but its content is {found}")
    return UploadCheck(found, ALLOWED[found], display_name(name))


def display_name(name: str) -> str:
    """The uploaded name as shown (never used as a path): no directories, no odd characters."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _SAFE_NAME.sub("_", base).strip(" .") or "evidence"
    return cleaned[:120]
