"""outputs.plan.indented: json.dumps(data, indent=2), byte for byte."""

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from beonet.outputs.plan import indented

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                     st.text(), st.sampled_from(["", "\u00e9", "\ud800", "\"\\/\n\t", "\x7f", "\U0001f600"]))
_keys = st.one_of(st.text(), st.integers(), st.floats(), st.booleans(), st.none())
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(_keys, inner, max_size=4)), max_leaves=40)


@settings(max_examples=500, deadline=None)
@given(_values)
def test_indented_is_json_dumps_with_an_indent_of_two(data):
    assert indented(data) == json.dumps(data, indent=2)


class _Text(str):
    pass


def test_other_types_and_cycles_are_left_to_json_dumps():
    for data in [{"a": _Text("x")}, [1, {2, 3}], {(1, 2): 3}, {"n": math.nan, "x": [True, 1.5e300]}]:
        try:
            expected = json.dumps(data, indent=2)
        except TypeError as exc:
            expected = "TypeError: %s" % exc
        try:
            got = indented(data)
        except TypeError as exc:
            got = "TypeError: %s" % exc
        assert got == expected
    loop: list[object] = []
    loop.append(loop)
    try:
        indented(loop)
    except ValueError as exc:
        assert "Circular reference" in str(exc)
    else:
        raise AssertionError("a cycle was written")
