"""tabulite: plain-text tables for terminal reports."""

from tabulite.table import render

__version__ = "0.4.0"
__all__ = ["render"]
