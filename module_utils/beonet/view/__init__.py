"""The cluster seen: per-family layouts, pinned Graphviz drawings and the
self-contained HTML page of `beonet view`."""
