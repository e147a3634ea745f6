"""A command line of positional arguments alone, read without argparse.

`beonet compile TOPOLOGY` names no option: what argparse would make of it is each
argument's default and the positionals in order. The command's own populate(name,
parser) is run against a Recorder, which keeps what each add_argument and
set_defaults says, and the namespace is built from that: argparse (its import, its
parser, its messages' translations) is not needed. A line with anything argparse
would have to decide (an option, a dash, a missing or extra value, a required option,
a value to convert or check) is left to argparse; the tests hold every plain line's
namespace equal to argparse's.
"""

from __future__ import annotations

from types import SimpleNamespace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SUPPRESS = "==SUPPRESS=="          # argparse.SUPPRESS: no default at all
_FLAGS = {"store_true": False, "store_false": True}


class Recorder:
    """Stands in for a command's parser: the defaults and positionals it declares;
    ok is False once it declares something a plain line cannot be read against."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}        # each argument's default
        self.defaults: dict[str, Any] = {}      # set_defaults: over the arguments' own
        self.positionals: list[str] = []
        self.ok = True

    def add_argument(self, *names: str, **kw: Any) -> Recorder:
        action = kw.get("action")
        if not names[0].startswith("-"):
            plain = action in (None, "store") and not {"nargs", "type", "choices"} & set(kw)
            self.ok = self.ok and plain
            self.positionals.append(kw.get("dest", names[0]))
            return self
        long = next((n for n in names if n.startswith("--")), names[0])
        dest = kw.get("dest") or long.lstrip("-").replace("-", "_")
        if action in _FLAGS:
            default = kw.get("default", _FLAGS[action])
        elif action in (None, "store"):
            default = kw.get("default")
            # argparse converts a text default with the option's type
            self.ok = self.ok and not (isinstance(default, str) and "type" in kw)
        else:
            self.ok = False
            return self
        self.ok = self.ok and not kw.get("required") and default != SUPPRESS
        self.values[dest] = default
        return self

    def set_defaults(self, **kw: Any) -> None:
        self.defaults.update(kw)

    def add_mutually_exclusive_group(self, required: bool = False) -> Recorder:
        self.ok = self.ok and not required
        return self

    def add_argument_group(self, *_args: Any, **_kw: Any) -> Recorder:
        return self

    def __getattr__(self, name: str) -> Any:
        """Anything else a parser does (sub-commands, say): not a plain command."""
        if name.startswith("__"):
            raise AttributeError(name)
        self.ok = False
        return lambda *_a, **_k: self


def namespace(name: str, recorder: Recorder, values: list[str]) -> SimpleNamespace | None:
    """What argparse gives for `beonet NAME VALUE...` (values: the line's positionals,
    none starting with a dash), or None when the line is argparse's to read."""
    if not recorder.ok or len(values) != len(recorder.positionals):
        return None
    given = dict(zip(recorder.positionals, values))
    return SimpleNamespace(command=name, **{**recorder.values, **recorder.defaults, **given})
