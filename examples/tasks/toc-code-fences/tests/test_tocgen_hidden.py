"""Hidden tests of toc-code-fences: no headings from code blocks, GitHub-numbered anchors."""

import shutil

from tocgen import Heading, anchors, find_headings, table_of_contents
from tocgen.cli import main

GUIDE_TOC = """\
- [Install](#install)
- [Usage](#usage)
  - [Options](#options)
- [Examples](#examples)
  - [Usage](#usage-1)
- [Configuration](#configuration)
  - [Options](#options-1)
"""


def titles(text):
    return [heading.text for heading in find_headings(text)]


def test_backtick_fences_are_code():
    doc = "## Setup\n\n```sh\n## not a heading\n# nor this\n```\n\n## Run\n"
    assert titles(doc) == ["Setup", "Run"]


def test_tilde_fences_are_code():
    doc = "## Setup\n\n~~~python\n## helpers\n~~~\n\n## Run\n"
    assert titles(doc) == ["Setup", "Run"]


def test_a_tilde_fence_can_hold_backticks():
    doc = "## Writing code\n\n~~~markdown\n```sh\n## still code\n~~~\n\n## After\n"
    assert titles(doc) == ["Writing code", "After"]


def test_heading_lines_are_kept():
    doc = "# Title\n\n```\n# code\n```\n\n## Next\n"
    assert [(h.level, h.line) for h in find_headings(doc)] == [(1, 1), (2, 7)]


def test_repeated_anchors_are_numbered():
    headings = [Heading(2, text, n) for n, text in enumerate(["Usage", "Usage", "Usage"])]
    assert anchors(headings) == ["usage", "usage-1", "usage-2"]


def test_headings_whose_anchors_match_collide():
    headings = [Heading(2, "Usage", 1), Heading(3, "Usage!", 2), Heading(2, "usage", 3)]
    assert anchors(headings) == ["usage", "usage-1", "usage-2"]


def test_the_guide():
    with open("/app/docs/guide.md", encoding="utf-8") as handle:
        assert table_of_contents(handle.read()) == GUIDE_TOC


def test_cli_writes_the_guide(tmp_path):
    path = shutil.copy("/app/docs/guide.md", tmp_path / "guide.md")
    assert main([str(path), "--write"]) == 0
    lines = path.read_text().splitlines()
    assert lines[2:11] == ["<!-- toc -->", *GUIDE_TOC.splitlines(), "<!-- /toc -->"]
