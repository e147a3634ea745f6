"""The gate: one reader for untrusted files and text, refusing what cannot be read
safely with the file, the line and the reason."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from beonet import gate


def test_brackets_in_strings_do_not_count_towards_the_depth():
    assert not gate.too_deep(b'{"a": "[[[[[[[[[[\\"[[[[[[[[", "b": [[]]}', 8)
    assert gate.too_deep(b'{"a": "]]]]]]]]]]", "b": [[[[[[[[]]]]]]]]}', 8)
    assert not gate.too_deep(b"[" * 8 + b"]" * 8, 8)
    assert gate.too_deep(b"[" * 9 + b"]" * 9, 8)
    assert gate.too_deep(b"[" * 9, 8)                          # a parser would recurse first
    assert not gate.too_deep(b"[{]}" * 100, 8)                 # not JSON: the parser says so
    assert not gate.too_deep(b"]]]]]]]]]]]]]]]]]]]]", 8)        # not JSON: the parser says so
    assert not gate.too_deep(b"[[{]" + b"[" * 20, 8)            # a mismatch before it gets deep: the parser's


@given(st.recursive(st.just(b""), lambda inner: st.lists(inner, max_size=3).flatmap(
    lambda parts: st.sampled_from([b"[%s]", b"{%s}"]).map(lambda shape: shape % b",".join(parts))),
    max_leaves=40), st.integers(0, 12))
def test_the_depth_of_balanced_brackets_is_their_deepest_nesting(text, most):
    depth = deepest = 0
    for c in text:
        depth += 1 if c in b"[{" else -1 if c in b"]}" else 0
        deepest = max(deepest, depth)
    assert gate.too_deep(text, most) == (deepest > most)


@pytest.mark.parametrize("make,message", [
    (lambda p: os.mkfifo(p), "cannot read: a pipe, socket or device, not a file"),
    (lambda p: p.mkdir(), "cannot read: a folder, not a file"),
    (lambda p: None, "cannot read: No such file or directory"),
    (lambda p: p.write_bytes(b"x" * 101), "is over 100 bytes, the limit for a test file"),
])
def test_only_a_regular_file_within_its_size_is_read(tmp_path, make, message):
    path = tmp_path / "f"
    make(path)
    with pytest.raises(gate.GateError) as caught:
        gate.read_bytes(str(path), 100, "a test file")
    assert str(caught.value) == "%s: %s" % (path, message)


def test_a_file_of_its_size_is_read_whole(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 100)
    assert gate.read_bytes(str(tmp_path / "f"), 100) == b"x" * 100


@pytest.mark.parametrize("text,message", [
    ('{"a": NaN}', "f.json: is not JSON: NaN is not a JSON value (JSON has no NaN or Infinity)"),
    ('[-Infinity]', "f.json: is not JSON: -Infinity is not a JSON value"),
    ('{"a": 1, "a": 2}', "f.json: is not JSON: the key 'a' is given twice in one object"),
    ('{"a\\n": 1, "a\\n": 2}', "f.json: is not JSON: the key 'a\\n' is given twice"),
    ('{"a": 1,\n "b": }', "f.json:2: is not JSON: Expecting value (column 7)"),
    ("[" * 5 + "]" * 5, "f.json: nests deeper than 4 levels"),
    ("[" * 100_000, "f.json: nests deeper than 4 levels"),
    ("[%s]" % ("9" * 40), "f.json: is not JSON: the integer 999999999999... has over 30 digits"),
    ("  \n", "f.json: is empty"),
])
def test_json_is_read_strictly(text, message):
    with pytest.raises(gate.GateError) as caught:
        gate.loads_json(text, "f.json", 4)
    assert str(caught.value).startswith(message)


def test_too_deep_is_its_own_refusal():
    with pytest.raises(gate.TooDeep):
        gate.loads_json("[[[]]]", None, 2)
    assert gate.loads_json("[[[]]]", None, 3) == [[[]]]


def test_text_that_is_not_utf8_names_its_byte_and_line(tmp_path):
    (tmp_path / "f").write_bytes(b'{"a":\n"\xe9"}')
    with pytest.raises(gate.GateError) as caught:
        gate.load_json(str(tmp_path / "f"), 100, 4)
    assert str(caught.value) == "%s:2: is not UTF-8 text (byte 0xe9 at offset 7)" % (tmp_path / "f")


def test_the_deepest_value_is_found_without_recursion():
    doc: list = []
    inner = doc
    for _ in range(5000):
        inner.append({"k": []})
        inner = inner[0]["k"]
    assert gate.deepest(doc, 10_001) is None
    assert gate.deepest(doc, 3) == [0, "k", 0, "k"]
    assert gate.deepest({"a": [1, {"b": 2}]}, 3) is None
