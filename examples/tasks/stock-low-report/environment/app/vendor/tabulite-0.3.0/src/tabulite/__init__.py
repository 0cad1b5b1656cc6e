"""tabulite: plain-text tables for terminal reports."""

from tabulite.table import render

__version__ = "0.3.0"
__all__ = ["render"]
