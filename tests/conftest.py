import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "module_utils"))
REGEN = os.environ.get("BEONET_REGEN") == "1"


def golden(path, text):
    """Compare text with a golden file; BEONET_REGEN=1 rewrites it instead."""
    path = pathlib.Path(path)
    if REGEN:
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), "missing golden file %s (run BEONET_REGEN=1 pytest)" % path
    assert text == path.read_text(encoding="utf-8"), "differs from %s" % path
