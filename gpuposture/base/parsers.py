"""The API's JSON request parser: DRF's, within the limits of gpuposture.base.safe_parse.

DRF's JSONParser lets a RecursionError from a deeply nested body escape as a 500; this one
answers 400 with a message, for every endpoint at once (REST_FRAMEWORK's parser classes).
"""

from __future__ import annotations

from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding

from gpuposture.base.safe_parse import SafeParseError, load_json

# The largest JSON body the API takes: a CSAF advisory (inventory.bulletins.store allows 20 MiB).
MAX_BODY_BYTES = 20 * 1024 * 1024
# Our own payloads nest under 15 levels (a CSAF advisory 11); serializers and the audit log
# walk what they get recursively, so nothing deeper is let in.
MAX_BODY_DEPTH = 64


class SafeJSONParser(JSONParser):
    def parse(
        self, stream: IO[bytes], media_type: str | None = None, parser_context: Any = None
    ) -> Any:
        encoding = get_encoding(parser_context or {})
        raw = stream.read(MAX_BODY_BYTES + 1)
        try:
            text = raw.decode(encoding)
            return load_json(
                text, max_bytes=MAX_BODY_BYTES, max_depth=MAX_BODY_DEPTH, allow_nan=not self.strict
            )
        except (SafeParseError, UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
