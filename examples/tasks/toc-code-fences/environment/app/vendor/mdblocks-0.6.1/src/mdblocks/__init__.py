"""mdblocks: split a Markdown document into its top-level blocks."""

from mdblocks.blocks import Block, blocks

__version__ = "0.6.1"
__all__ = ["Block", "blocks"]
