"""python -m beonet.cli: the `beonet` command."""

from . import run

run()
