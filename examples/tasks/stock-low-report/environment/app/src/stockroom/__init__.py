"""stockroom: the warehouse inventory and its reports."""

from stockroom.inventory import Item, StockError, adjust, load, save

__all__ = ["Item", "StockError", "adjust", "load", "save"]
