"""A value a user sent, quoted in an error message: never the whole of it. PURE.

An error that repeats a 1 MB value back is as large as the request and buries its reason; the
first characters say which value it was, and the length how large it was."""

from __future__ import annotations

MAX_ECHO_CHARS = 60


def echoed(value: object, limit: int = MAX_ECHO_CHARS) -> str:
    """`value` as repr() quotes it (control characters escaped, so the message is safe to store
    and print), cut to `limit` characters with the full length said."""
    try:
        text = repr(value)
    except ValueError:  # an int past Python's 4300-digit conversion limit
        return f"a {type(value).__name__} too long to show"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"
