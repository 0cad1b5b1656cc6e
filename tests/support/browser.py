"""Headless Debian chromium driven by Playwright, for the viewer's browser tests.

Playwright's own browser downloads are never used: the tests drive the system
chromium (`make test` installs it), so they run offline. Screenshots go to
`test-artifacts/viewer/` (or `$SPROUT_ARTIFACTS`) for a person to look at.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sprout.viewer.headless import CHROMIUM_ARGS, find_chromium
from tests.support.repo_paths import REPO


def artifacts() -> Path:
    root = Path(os.environ.get("SPROUT_ARTIFACTS", REPO / "test-artifacts"))
    folder = root / "viewer"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless chromium, or a skip naming what is missing."""
    executable, missing = find_chromium()
    if executable is None:
        pytest.skip(str(missing))
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=list(CHROMIUM_ARGS))
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
