"""Anchors: the fragment GitHub links a heading by."""

from __future__ import annotations

import re

from tocgen.headings import Heading


def anchor(text: str) -> str:
    """Lower case, punctuation dropped (letters, digits, `-` and `_` kept), spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(headings: list[Heading]) -> list[str]:
    """The anchor of each heading, in order."""
    return [anchor(heading.text) for heading in headings]
