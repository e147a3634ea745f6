#!/usr/bin/env python3
"""The view's pictures in docs/: the testbed's page with a path, the 4x4 mesh with
a path along its segments, a failure on the custom example, and the testbed drawn
by `beonet graph --format png`. Headless Chromium as the browser test drives it
(tests/browser.py); run from the checkout: .venv/bin/python scripts/view-screenshots.py"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "module_utils")]

from browser import chrome, click_node, open_page  # noqa: E402

from beonet import cli  # noqa: E402

DOCS = os.path.join(ROOT, "docs")


def page(topology: str, folder: str) -> str:
    """The view of topologies/TOPOLOGY.yml written into folder; its path."""
    out = os.path.join(folder, topology + ".html")
    if cli.main(["view", os.path.join(ROOT, "topologies", topology + ".yml"), "-o", out]):
        raise SystemExit("beonet view %s failed" % topology)
    return out


def shoot(driver: object, path: str, fragment: str, name: str, then: object = None) -> None:
    """Open the page, do `then` (clicks), save docs/NAME."""
    open_page(driver, path, fragment)
    if callable(then):
        then(driver)
    driver.save_screenshot(os.path.join(DOCS, name))      # type: ignore[attr-defined]
    print("wrote docs/%s" % name)


def fail_rack(driver: object) -> None:
    """Fail mode on, the rack-a switch failed."""
    driver.find_element("id", "failmode").click()          # type: ignore[attr-defined]
    click_node(driver, "a1")
    driver.execute_script(                                  # type: ignore[attr-defined]
        "Array.from(document.querySelectorAll('g.hub')).find(function (g) {"
        " return g.textContent.indexOf('rack-a') === 0; })"
        ".dispatchEvent(new MouseEvent('click', {bubbles: true}))")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        driver = chrome(1400, 900)
        try:
            shoot(driver, page("metanode-testbed", folder), "#from=node01&to=node20",
                  "view-testbed.png")
            shoot(driver, page("routed-mesh", folder), "#from=node-0-0&to=node-3-3", "view-mesh.png")
            shoot(driver, page("custom-example", folder), "", "view-failure.png", fail_rack)
        finally:
            driver.quit()
    subprocess.run([sys.executable, "-m", "beonet.cli", "graph",
                    os.path.join(ROOT, "topologies", "metanode-testbed.yml"), "--format", "png",
                    "-o", os.path.join(DOCS, "graph-testbed.png")], check=True,
                   env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "module_utils")))
    print("wrote docs/graph-testbed.png")


if __name__ == "__main__":
    main()
