"""Headless Chromium (Debian's chromium and chromium-driver) driven by selenium,
for the view's page: open a file:// page, wait until its script has drawn it,
read the console. scripts/host-tools.sh installs both; as root Chromium needs
--no-sandbox."""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

CHROMIUM = "chromium"
DRIVER = "chromedriver"


def missing() -> str | None:
    """What is missing for the browser tests, or None (looked up as the host tests'
    guard looks programs up: this is a test of the machine's browser)."""
    from hermetic import _lacks
    if _lacks((CHROMIUM, DRIVER), False):
        return "Debian's chromium and chromium-driver (scripts/host-tools.sh installs them)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium (requirements.txt)"
    return None


def may_skip() -> bool:
    """Only a user who cannot install packages may go without the browser."""
    return os.geteuid() != 0


def chrome(width: int = 1400, height: int = 1000) -> Any:
    """A headless Chromium session with its console log kept."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=%d,%d" % (width, height)):
        options.add_argument(arg)
    options.binary_location = shutil.which(CHROMIUM) or CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(shutil.which(DRIVER) or DRIVER))


def open_page(driver: Any, path: str, fragment: str = "", wait: float = 60.0) -> float:
    """Open a page from a file:// URL and wait until its script has drawn it;
    the seconds it took."""
    start = time.monotonic()
    driver.get("file://" + os.path.abspath(path) + fragment)
    while driver.execute_script("return document.body && document.body.getAttribute('data-ready')") != "1":
        if time.monotonic() - start > wait:
            raise TimeoutError("%s not drawn in %.0f s" % (path, wait))
        time.sleep(0.05)
    return time.monotonic() - start


def console_errors(driver: Any) -> list[str]:
    """The console's errors since the last call."""
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def node_index(driver: Any, name: str) -> int:
    """The index of a node in the page's data."""
    return int(driver.execute_script(
        "var name = arguments[0], d = JSON.parse(document.getElementById('data').textContent);"
        "return d.nodes.findIndex(function (n) { return n[0] === name; });", name))


def click_node(driver: Any, name: str) -> None:
    """Click a node's circle, as a user does (the mouse at its centre)."""
    from selenium.webdriver.common.by import By
    driver.find_element(By.CSS_SELECTOR, "#node-%d circle" % node_index(driver, name)).click()
