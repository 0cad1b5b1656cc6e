"""The search index: each post's words, folded to ASCII so "creme" finds "Crème"."""

from __future__ import annotations

import json
import re

import asciifold

from quillsite.posts import Post


def keywords(post: Post) -> list[str]:
    """The distinct words of the post's title and tags, folded and lower-cased, sorted."""
    text = asciifold.fold(" ".join([post.title, *post.tags])).lower()
    return sorted(set(re.findall(r"[a-z0-9]+", text)))


def search_index(pages: list[tuple[str, Post]]) -> str:
    """search.json: every page's path and title with its keywords."""
    entries = [
        {"path": path, "title": post.title, "keywords": keywords(post)} for path, post in pages
    ]
    return json.dumps(entries, ensure_ascii=False, indent=1)
