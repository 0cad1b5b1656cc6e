"""How sprout drives a headless chromium (the viewer's browser tests and its benchmark).

Debian's chromium, never a browser Playwright downloads, so everything runs offline.
"""

from __future__ import annotations

import shutil

CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
"""Without the background-networking flags chromium keeps dialling out at start."""


def find_chromium() -> tuple[str | None, str | None]:
    """The chromium executable, or None and why it cannot be used."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return None, "playwright is not installed (the dev extra)"
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        return None, "chromium is not installed (Debian package chromium; make installs it)"
    return executable, None
