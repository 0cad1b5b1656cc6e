"""tocgen: tables of contents for Markdown documents."""

from tocgen.anchors import anchor, anchors
from tocgen.headings import Heading, find_headings
from tocgen.toc import insert_toc, table_of_contents

__all__ = ["Heading", "anchor", "anchors", "find_headings", "insert_toc", "table_of_contents"]
