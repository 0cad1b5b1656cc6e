"""Slugs: the URL name of a post."""

from __future__ import annotations

import re


def slugify(title: str) -> str:
    """Lower-case ASCII letters and digits, words joined by single hyphens."""
    text = title.lower()
    text = re.sub(r"[^a-z0-9]+", "-", text)
    return text.strip("-")
