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
# What the content must be for each name ending a reviewer's computer opens by: a text file named
# .pdf would open in a PDF reader (or be trusted as one), so the name and the bytes must agree.
EXTENSION_KINDS = {
    ".pdf": "application/pdf",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".txt": "text/plain",
    ".csv": "text/plain",
    ".json": "text/plain",
}
KIND_WORDS = {
    "application/pdf": "a PDF",
    "image/png": "a PNG image",
    "image/jpeg": "a JPEG image",
    "text/plain": "text",
}
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
    _extension_agrees(name, "text/plain" if found in TEXT_TYPES else found)
    return UploadCheck(found, ALLOWED[found], display_name(name))


def _extension_agrees(name: str, found: str) -> None:
    """Refuse a name ending the content does not match (magic bytes decide, not the name)."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    extension = "." + base.rsplit(".", 1)[-1] if "." in base else ""
    if not extension:
        return  # no ending to contradict: the stored copy gets the ending of what it is
    expected = EXTENSION_KINDS.get(extension)
    if expected is None:
        raise UploadRefused(
            f"files ending {extension} are not accepted; attach a .pdf, .png, .jpg, .txt, "
            ".csv or .json file"
        )
    if expected != found:
        raise UploadRefused(
            f"the name ends {extension} but the content is {KIND_WORDS[found]}, not "
            f"{KIND_WORDS[expected]}"
        )


def display_name(name: str) -> str:
    """The uploaded name as shown (never used as a path): no directories, no odd characters."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _SAFE_NAME.sub("_", base).strip(" .") or "evidence"
    return cleaned[:120]
