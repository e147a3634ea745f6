"""gate.yamlplain: a document it reads without PyYAML gives the data (values and
types) and key-path lines that PyYAML's safe loader gives through yamltext, and
everything else goes to PyYAML."""

from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from beonet.gate import yamlplain, yamltext

KEYS = ["name", "family", "rate_mbit", "a", "b-c", "_x", "y", "n", "on", "yes", "No", "null", "True",
        "OFF", "x1", "k", "1a", "<<", "=", "a b", "a:b", "é", "a#b", "?", "-"]
VALUES = ["1", "0", "-5", "-0", "012", "0x1f", "0o7", "1_000", "+3", "1:20", "190:20:30", "1.5", "-0.0",
          "0.50", "1.", ".5", "1e3", "1.0e+3", "6.8523015e+5", ".inf", "-.Inf", ".NaN", "yes", "No",
          "TRUE", "off", "On", "y", "n", "null", "Null", "~", "", "2001-12-14",
          "2001-12-14t21:59:43.10-05:00",
          "metagraph", "SC98 routed testbed, L=4 P=9 C=1 (36 nodes)", "a  b", "a: b", "a:b", "a #b",
          "a # c", "a#b", "x # yes", "'q'", "''", "'it''s'", "'a # b'", '"d"', '""', '"a\\tb"', '"a\'b"',
          "'10.0.0.0/16'", "10.0.0.0/16", "fd00::/64", "- a", "-", "[1, 2]", "{a: 1}", "&a x", "*a",
          "!!str 1", "!!int 3", "|", ">", "%x", "@x", "`x", "=", "<<", "a\tb", "é", "a ", "a%", "x@y",
          "a,b", "a/b", "(x)", "a=b", "a+b", "a-", "-a", "?", "? a", "a?", "q'", "x\"y\""]
JUNK = ["", "   ", "# comment", "  # indented comment", "---", "--- # doc", "...", "- item", "  - item",
        "%YAML 1.1", "\t", "\ta: 1", "a: 1\r", "\x0c", "# \x01", "\ufeffa: 1", "? a", ": b", "a:", "  a:"]

_line = st.one_of(
    st.tuples(st.sampled_from([0, 0, 2, 2, 4, 1, 3, 6]), st.sampled_from(KEYS),
              st.one_of(st.none(), st.sampled_from(VALUES)), st.sampled_from(["", "", " # c", "#c", "  "]))
    .map(lambda t: " " * t[0] + t[1] + ":" + ("" if t[2] is None else " " + t[2]) + t[3]),
    st.sampled_from(JUNK))


def _typed(value):
    """The value with every type spelled out (1, 1.0 and True are not the same)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, repr(value))


def _same_as_pyyaml(text):
    """True when yamlplain read text (and then as yamltext did); False when it left it."""
    plain = yamlplain.read(text)
    if plain is None:
        return False
    data, lines, problems = yamltext.parse_yaml(text, "t.yml")
    assert not problems, (text, problems.items)
    assert _typed(plain[0]) == _typed(data), text
    assert plain[1] == lines, text
    return True


@settings(max_examples=600, deadline=None)
@given(st.lists(_line, min_size=1, max_size=12), st.sampled_from(["\n", ""]))
def test_a_generated_document_reads_as_pyyaml_reads_it(lines, end):
    _same_as_pyyaml("\n".join(lines) + end)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "name"]), st.integers(0, 3),
                          st.sampled_from(["1", "x", "-2.5", "'q'", None, *VALUES])), min_size=1, max_size=8))
def test_nested_mappings_read_as_pyyaml_reads_them(entries):
    """Mostly well-formed nesting, so that most documents are read here."""
    text = "".join("%s%s:%s\n" % ("  " * depth, key, "" if value is None else " " + value)
                   for key, depth, value in entries)
    _same_as_pyyaml(text)


def test_the_shipped_topologies_read_as_pyyaml_reads_them():
    read = [p.name for p in sorted((ROOT / "topologies").glob("*.yml")) if _same_as_pyyaml(p.read_text())]
    assert "metanode-testbed.yml" in read


def test_hostile_or_unusual_documents_go_to_pyyaml():
    for text in ["", "# only a comment\n", "---\n---\na: 1\n", "a: 1\n---\nb: 2\n", "a: 1\n...\n",
                 "a: 1\na: 2\n", "a:\n  b: 1\n c: 2\n", "  a: 1\nb: 2\n", "a: b\n  c\n", "a: 1 #c\n  b: 2\n",
                 "a:\n\tb: 1\n", "a: 'x\n  y'\n", "a: x\x00\n", "a: \x85\n", "a: 1\r\nb: 2\r\n",
                 "on: 1\n", "a: yes\n", "a: ~\n", "a: 0777\n", "a: 1e3\n", "a: .inf\n", "a: &x 1\nb: *x\n",
                 "a: !!str 1\n", "<<: {a: 1}\n", "a: [1, 2]\n", "a:\n- 1\n", "a: |\n  text\n",
                 "a: 1%s\n" % ("0" * 5000), "a: 1%s.5\n" % ("0" * 400),
                 "".join("%sk:\n" % ("  " * d) for d in range(60))]:
        assert yamlplain.read(text) is None, repr(text)
