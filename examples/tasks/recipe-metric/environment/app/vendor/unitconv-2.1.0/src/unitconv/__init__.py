"""unitconv: convert a quantity between units of the same dimension (mass or volume)."""

from unitconv.registry import UNITS, VERSION, DimensionError, UnknownUnit, convert, dimension

__version__ = VERSION
__all__ = ["UNITS", "DimensionError", "UnknownUnit", "convert", "dimension"]
