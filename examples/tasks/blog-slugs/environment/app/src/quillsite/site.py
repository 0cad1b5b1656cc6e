"""Building the site: a page per post, the index and the search index."""

from __future__ import annotations

import html
from pathlib import Path

from quillsite.posts import Post
from quillsite.search import search_index
from quillsite.slugs import slugify


def plan_pages(posts: list[Post]) -> list[tuple[str, Post]]:
    """(path, post) for every post, oldest first; a path is `YEAR/SLUG.html`."""
    pages = []
    for post in sorted(posts, key=lambda post: (post.date, post.title)):
        path = f"{post.date.year}/{slugify(post.title)}.html"
        pages.append((path, post))
    return pages


def render_post(post: Post) -> str:
    paragraphs = "".join(f"<p>{html.escape(p)}</p>" for p in post.body.split("\n\n") if p)
    return (
        f"<article><h1>{html.escape(post.title)}</h1>"
        f"<time>{post.date.isoformat()}</time>{paragraphs}</article>\n"
    )


def render_index(pages: list[tuple[str, Post]]) -> str:
    items = "".join(
        f'<li><a href="{path}">{html.escape(post.title)}</a> {post.date.isoformat()}</li>'
        for path, post in reversed(pages)
    )
    return f"<ul>{items}</ul>\n"


def build(posts: list[Post], out: str | Path) -> dict[str, str]:
    """Write the site under `out`; returns {path: html} of every file written."""
    pages = plan_pages(posts)
    files = {path: render_post(post) for path, post in pages}
    files["index.html"] = render_index(pages)
    files["search.json"] = search_index(pages)
    for path, text in files.items():
        target = Path(out, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return files
