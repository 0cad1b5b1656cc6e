"""pipewright: build order and version checks for the packages of a monorepo."""

from pipewright.constraints import unmet
from pipewright.graph import build_order
from pipewright.workspace import Package, WorkspaceError, load, parse

__all__ = ["Package", "WorkspaceError", "build_order", "load", "parse", "unmet"]
