"""The README and the docs as a newcomer reads them: the first example after the two
commands runs a user's own model server, the Python example runs as written, every link
between the docs leads somewhere, and nothing names a file outside the repository (a user
has only the repository)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sprout.images import ImageCache
from tests.support.repo_paths import REPO
from tests.support.requirements import require_overlay

README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def test_the_first_example_after_the_two_commands_runs_a_users_model_server():
    first, second = _blocks(README.read_text(), "sh")[:2]
    assert "make demo" in first and "make test" in first
    assert "sprout run" in second and "--model openai/" in second and "--base-url" in second


@pytest.mark.sandbox
def test_the_python_example_runs_as_written(tmp_path: Path):
    require_overlay()
    (example,) = _blocks(README.read_text(), "python")
    image = re.search(r'image="([^"]+)"', example)
    assert image is not None
    if ImageCache().get(image[1]) is None:
        pytest.skip(f"{image[1]} is not in the image cache (make demo builds it)")
    done = subprocess.run(
        [sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "42\n"


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.name)
def test_every_link_between_the_docs_leads_to_a_file(page: Path):
    text = page.read_text()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"{page.name} links to {target}, which is not there"


def test_no_file_names_a_path_outside_the_repository():
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    outside = re.compile(r"\.\./shared\b|\bDESIGN\.md\b")
    found = []
    for name in filter(None, listed.split("\0")):
        try:
            text = (REPO / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        found += [f"{name}: {m[0]}" for m in outside.finditer(text)]
    assert found == []
