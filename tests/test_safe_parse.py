"""gpuposture.base.safe_parse: YAML and JSON from clusters and users, within limits (issue 16)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import yaml

from gpuposture.base.safe_parse import SafeParseError, load_json, load_yaml, load_yaml_all
from tests.realworld import REPO_ROOT

MIB = 1024 * 1024
# Nine levels of nine aliases each: a billion "lol"s once anything walks it, in under 1 kB.
BILLION_LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)


def nested_block(levels: int) -> str:
    """A mapping nested `levels` deep by indentation only (no brackets)."""
    return "".join(" " * i + "k:\n" for i in range(levels))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 2_000 + "]" * 2_000, "nested deeper than 64 levels (line 1)"),
        ("sharing:\n" + textwrap.indent(nested_block(200), " "), "nested deeper than 64"),
        ("\n".join(" " * i + "-" for i in range(0, 400, 2)), "nested deeper than 64"),
        (BILLION_LAUGHS, "line 2: more than 8 YAML aliases"),
        ("x: " + "a" * MIB, "too large: 1.0 MiB; the limit is 1.0 MiB"),
        ("a: [1, 2\n", "not valid YAML: while parsing a flow sequence"),
        ("a: !!python/object/apply:os.system ['true']\n", "not valid YAML"),
        ("when: 2001-99-99\n", "not valid YAML: ValueError: month must be in 1..12"),
        ("a: 1\n---\nb: 2\n", "expected one document"),
    ],
    ids=["flow", "block", "block-list", "aliases", "size", "syntax", "tag", "date", "two-docs"],
)
def test_yaml_beyond_the_limits_is_refused_with_a_clear_message(text, message):
    with pytest.raises(SafeParseError) as caught:
        load_yaml(text, max_bytes=MIB, max_aliases=8)
    assert message in str(caught.value)


def test_yaml_within_the_limits_loads_and_brackets_in_strings_do_not_count():
    text = "a: '[[[[[['\nb: |\n  {{{{{{{{\nc: &x [1]\nd: *x\n"
    assert load_yaml(text, max_bytes=MIB, max_depth=2, max_aliases=1) == {
        "a": "[[[[[[",
        "b": "{{{{{{{{\n",
        "c": [1],
        "d": [1],
    }
    assert load_yaml_all("a: 1\n---\n---\nb: 2\n", max_bytes=MIB) == [{"a": 1}, {"b": 2}]


def test_no_aliases_at_all_by_default():
    with pytest.raises(SafeParseError, match="line 2: YAML aliases .* are not allowed"):
        load_yaml("a: &x 1\nb: *x\n", max_bytes=MIB)


def test_a_recursion_error_of_the_parser_becomes_the_one_error_type():
    # With the depth check set above what the pure-Python composer can recurse, it is the
    # composer that gives up: still a SafeParseError, never a RecursionError.
    text = "[" * 5_000 + "]" * 5_000
    with pytest.raises(SafeParseError, match="nested too deeply to read"):
        load_yaml(text, max_bytes=MIB, max_depth=10_000, loader=yaml.SafeLoader)


def test_200000_levels_of_brackets_do_not_crash_the_process():
    # libyaml's C composer segfaults on this; run it in a child so a crash is a failure here,
    # not the end of pytest.
    code = (
        "from gpuposture.base.safe_parse import SafeParseError, load_yaml\n"
        "try:\n"
        "    load_yaml('[' * 200_000, max_bytes=1 << 20)\n"
        "except SafeParseError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "nested deeper than 64 levels" in done.stdout


@pytest.mark.parametrize(
    ("text", "kwargs", "message"),
    [
        ("[" * 100_000, {}, "nested deeper than 64 levels (at character 64)"),
        ("[" * 100_000, {"max_depth": None}, "not valid JSON: nested too deeply to read"),
        ('{"a": ' * 65 + "1" + "}" * 65, {}, "nested deeper than 64"),
        ("{not json", {}, "not valid JSON: Expecting property name"),
        (b'{"a": "\xff"}', {}, "cannot be read as UTF-8 text (byte 7)"),
        ("NaN", {"allow_nan": False}, "NaN is not a JSON number"),
        ("1" * (MIB + 1), {}, "too large"),
    ],
)
def test_json_beyond_the_limits_is_refused(text, kwargs, message):
    with pytest.raises(SafeParseError) as caught:
        load_json(text, max_bytes=MIB, **kwargs)
    assert message in str(caught.value)


def test_json_strings_with_brackets_and_escaped_quotes_do_not_count():
    text = '{"a": "[[[[[[[[[[\\"{{{{{{{{{{", "b": [[1]], "c": "\\\\"}'
    assert load_json(text, max_bytes=MIB, max_depth=3) == {
        "a": '[[[[[[[[[["{{{{{{{{{{',
        "b": [[1]],
        "c": "\\",
    }
    assert load_json(b"\xef\xbb\xbf[1]", max_bytes=10) == [1]  # a byte-order mark is no content
