"""clfparse: read access log lines in the Common Log Format into records."""

from clfparse.parser import ParseError, Record, parse_line

__version__ = "1.1.0"
__all__ = ["ParseError", "Record", "parse_line"]
