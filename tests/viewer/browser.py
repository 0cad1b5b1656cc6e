"""Headless Debian chromium driven by Playwright, for the viewer's browser tests.

Playwright's own browser downloads are never used: the tests drive the system
chromium (`make test` installs it), so they run offline. Screenshots go to
`test-artifacts/viewer/` (or `$SPROUT_ARTIFACTS`) for a person to look at.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
"""Without the background-networking flags chromium keeps dialling out at start."""


def artifacts() -> Path:
    root = Path(os.environ.get("SPROUT_ARTIFACTS", Path(__file__).parents[2] / "test-artifacts"))
    folder = root / "viewer"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless chromium, or a skip naming what is missing."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (the dev extra)"
    )
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.skip("chromium is not installed (Debian package chromium; make test installs it)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh 1280x800 page; the test's screenshot is saved under its name at the end."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.errors = errors
    yield opened
    context.close()
