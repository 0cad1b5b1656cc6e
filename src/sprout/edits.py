"""Which changed paths are edits, and which are what running code writes by the way.

Byte-code caches, test-runner caches and git's bookkeeping change whenever the
agent runs the tests; counted as edits they would blame the wrong turn, crowd
the roles' prompts and fill the attempt's patch with binary noise.
"""

from __future__ import annotations

NOISE = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git"})


def is_noise(path: str) -> bool:
    """Whether `path` is a cache or git bookkeeping rather than something a turn edited."""
    return path.endswith(".pyc") or any(part in NOISE for part in path.split("/"))
