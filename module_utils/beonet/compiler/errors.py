"""Error collection shared by every stage.

Each stage appends to one ``Problems`` list and the pipeline stops after the
first stage that reported anything, so all errors of a stage come out together.
A message names the file, the line (when the loader knows it) and the key
path: ``topologies/x.yml:12: mesh.dims[1]: must be an integer >= 2``.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..agent.names import escaped as printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Problem:
    __slots__ = ("file", "line", "path", "message", "stage")

    def __init__(self, message: str, path: str = "", file: str | None = None,
                 line: int | None = None, stage: str | None = None) -> None:
        self.file = file
        self.line = line
        self.path = path
        self.message = message
        self.stage = stage

    def __str__(self) -> str:
        where = self.file or "<topology>"
        if self.line:
            where = "%s:%d" % (where, self.line)
        if self.path:
            return printable("%s: %s: %s" % (where, self.path, self.message))
        return printable("%s: %s" % (where, self.message))

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "path": self.path,
                "message": self.message, "stage": self.stage, "text": str(self)}


class Problems:
    """Collects problems for one stage; ``lines`` maps key paths to line numbers."""

    def __init__(self, file: str | None = None, lines: dict[str, int] | None = None) -> None:
        self.file = file
        self.lines = lines or {}
        self.items: list[Problem] = []
        self.stage: str | None = None

    def line_of(self, path: str) -> int | None:
        """Line of the key path, or of its nearest parent the loader recorded."""
        probe = path
        while probe:
            if probe in self.lines:
                return self.lines[probe]
            cut = max(probe.rfind("."), probe.rfind("["))
            probe = probe[:cut] if cut > 0 else ""
        return None

    def add(self, path: str, message: str, file: str | None = None, line: int | None = None) -> None:
        if file is None:
            file = self.file
            if line is None:
                line = self.line_of(path)
        self.items.append(Problem(message, path, file, line, self.stage))

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def texts(self) -> list[str]:
        return [str(p) for p in self.items]


class CompileError(Exception):
    """Raised by the pipeline with every problem of the failing stage."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))
