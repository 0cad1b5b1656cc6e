"""mdblocks: split a Markdown document into its top-level blocks."""

from mdblocks.blocks import Block, blocks

__version__ = "0.5.0"
__all__ = ["Block", "blocks"]
