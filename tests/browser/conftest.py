"""Headless Chromium for the report tests: Debian's ``chromium`` driven by Playwright.

Playwright talks to the browser over pipes (no TCP port), and no browser is downloaded: the
system's Chromium is used. ``.ci/run`` installs it; without it these tests skip.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# Collects what the page reports: CSP violations and anything a page script would set.
WATCH = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__csp.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""


def find_chromium() -> str | None:
    """``$HREFINE_CHROMIUM``, or a Chromium on the PATH or in /usr/bin."""
    candidates = [
        os.environ.get("HREFINE_CHROMIUM"),
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
        "/usr/bin/chromium",
    ]
    for path in candidates:
        if path and Path(path).is_file() and os.access(path, os.X_OK):
            return path
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium shared by one module's tests.

    Module scope, not session: Playwright's sync API holds an event loop open while it runs, and
    async tests collected after the browser tests need it closed.
    """
    executable = find_chromium()
    if executable is None:
        pytest.skip("no Chromium found (apt-get install chromium, or set HREFINE_CHROMIUM)")
    # playwright is a dev dependency: without it the setup is broken, which is an error.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        # --no-sandbox: CI containers run as root, where Chromium's sandbox cannot start.
        launched = pw.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Tab:
    """A browser page and what it reported: errors on the console and dialogs it opened."""

    page: Any
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def open(self, path: Path) -> None:
        """Load a report file and wait until its script has run."""
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_selector("body[data-ready]", state="attached", timeout=60_000)

    def csp_violations(self) -> list[str]:
        return list(self.page.evaluate("window.__csp"))


@pytest.fixture
def tab(browser: Any) -> Iterator[Tab]:
    """A fresh 1400×900 page that records console errors, dialogs and CSP violations."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.add_init_script(WATCH)
    out = Tab(page)
    page.on("pageerror", lambda exc: out.errors.append(str(exc)))
    page.on("console", lambda msg: msg.type == "error" and out.errors.append(msg.text))

    def on_dialog(dialog: Any) -> None:
        out.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    try:
        yield out
    finally:
        context.close()
