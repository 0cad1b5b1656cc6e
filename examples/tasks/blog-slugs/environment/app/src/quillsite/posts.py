"""Post files: `title:`, `date:` and `tags:` lines, a blank line, then the body."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path


class PostError(ValueError):
    """A post file that cannot be read; the message names the file and the field."""


@dataclass(frozen=True)
class Post:
    title: str
    date: datetime.date
    body: str
    tags: tuple[str, ...] = ()


def parse_post(text: str, where: str = "post") -> Post:
    header, _, body = text.partition("\n\n")
    fields: dict[str, str] = {}
    for line in header.splitlines():
        key, colon, value = line.partition(":")
        if not colon:
            raise PostError(f"{where}: expected 'field: value', got {line!r}")
        fields[key.strip().lower()] = value.strip()
    for required in ("title", "date"):
        if not fields.get(required):
            raise PostError(f"{where}: missing {required!r}")
    try:
        date = datetime.date.fromisoformat(fields["date"])
    except ValueError:
        raise PostError(f"{where}: date {fields['date']!r} is not YYYY-MM-DD") from None
    tags = tuple(tag.strip() for tag in fields.get("tags", "").split(",") if tag.strip())
    return Post(fields["title"], date, body.strip(), tags)


def load_posts(folder: str | Path) -> list[Post]:
    """Every `*.txt` post in `folder`, oldest first."""
    posts = [
        parse_post(path.read_text(encoding="utf-8"), where=str(path))
        for path in sorted(Path(folder).glob("*.txt"))
    ]
    return sorted(posts, key=lambda post: (post.date, post.title))
