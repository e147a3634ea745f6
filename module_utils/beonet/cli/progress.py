"""The compile's progress on a terminal: the command line's own callback for
the compiler's stages (compiler.pipeline.progress), shown once a compile has
run for a while; on anything else (a pipe, a CI log) nothing is shown."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


class Progress:
    """Names the stage a compile is in, on a terminal, once it has run for
    `after` seconds: the stage it is in then, and each later one as it starts."""

    def __init__(self, stream: TextIO, after: float = 2.0) -> None:
        self.stream = stream
        self.start = time.monotonic()
        self.current = "loading the topology"
        self.live = False
        self.lock = threading.Lock()
        self.timer = threading.Timer(after, self._wake)
        self.timer.daemon = True

    def stage(self, what: str) -> None:
        with self.lock:
            self.current = what
            if self.live:
                self._show()

    def _wake(self) -> None:
        with self.lock:
            self.live = True
            self._show()

    def _show(self) -> None:
        self.stream.write("beonet: %s (%.1f s)\n" % (self.current, time.monotonic() - self.start))
        self.stream.flush()


@contextmanager
def shown(stream: TextIO, after: float = 2.0) -> Iterator[None]:
    """Within the block, compiles report their stages on stream when it is a
    terminal and they run for more than `after` seconds."""
    if not stream.isatty():
        yield
        return
    from ..compiler import pipeline
    reporter = Progress(stream, after)
    reporter.timer.start()
    try:
        with pipeline.progress(reporter.stage):
            yield
    finally:
        reporter.timer.cancel()
