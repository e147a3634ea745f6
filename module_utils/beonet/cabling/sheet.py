"""The cabling sheet of a compiled topology: every cable with both ends, and the
switches they plug into (made by ``compiler.cables`` from the graph)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..compiler import cables
from ..compiler.cables import Cable, NicEnd, PortEnd, Sheet, SwitchInfo, label
from ..compiler.model import Graph

if TYPE_CHECKING:
    from ..compiler.cables import End

__all__ = ["Cable", "End", "NicEnd", "PortEnd", "Sheet", "SwitchInfo", "label", "sheet"]


class _Compiled(Protocol):
    @property
    def graph(self) -> Graph: ...


def sheet(compiled: _Compiled) -> Sheet:
    """The cabling sheet of a compiled topology."""
    return cables.sheet(compiled.graph)
