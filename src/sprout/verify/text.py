"""Text cut to size for diagnostics: a message capped, a log's tail."""

from __future__ import annotations


def cap(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    marker = f" [... cut, {len(text)} characters in all]"
    if limit <= len(marker):
        return text[:limit]
    return text[: limit - len(marker)] + marker


def tail(log: str, limit: int) -> str:
    """The last `limit` characters of a log, starting at a whole line where one is near."""
    if len(log) <= limit:
        return log
    marker = f"[... the first part of {len(log)} characters is cut]\n"
    if limit <= len(marker):
        return log[-limit:]
    body = log[-(limit - len(marker)) :]
    newline = body.find("\n")
    if 0 <= newline < len(body) // 2:
        body = body[newline + 1 :]
    return marker + body
