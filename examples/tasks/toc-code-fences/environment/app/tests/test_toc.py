import pytest
from tocgen import anchor, find_headings, insert_toc, table_of_contents

DOC = """\
# Title

<!-- toc -->
<!-- /toc -->

## Getting started

### Install the `tocgen` tool

## FAQ's & tips ##
"""


def test_headings_are_found_with_their_levels():
    assert [(h.level, h.text, h.line) for h in find_headings(DOC)] == [
        (1, "Title", 1),
        (2, "Getting started", 6),
        (3, "Install the `tocgen` tool", 8),
        (2, "FAQ's & tips", 10),
    ]


def test_anchor_like_github():
    assert anchor("Install the `tocgen` tool") == "install-the-tocgen-tool"
    assert anchor("FAQ's & tips") == "faqs--tips"


def test_table_of_contents():
    assert table_of_contents(DOC) == (
        "- [Getting started](#getting-started)\n"
        "  - [Install the `tocgen` tool](#install-the-tocgen-tool)\n"
        "- [FAQ's & tips](#faqs--tips)\n"
    )


def test_insert_between_the_markers():
    written = insert_toc(DOC, "- [x](#x)\n")
    assert written.splitlines()[2:5] == ["<!-- toc -->", "- [x](#x)", "<!-- /toc -->"]
    assert insert_toc(written, "- [x](#x)\n") == written


def test_markers_are_required():
    with pytest.raises(ValueError, match="markers"):
        insert_toc("# Title\n", "")
