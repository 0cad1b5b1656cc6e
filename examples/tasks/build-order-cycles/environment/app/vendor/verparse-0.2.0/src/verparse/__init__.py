"""verparse: caret and tilde ranges as plain comparisons.

^1.2.3  ->  >=1.2.3, <2.0.0      (^0.2.3 -> >=0.2.3, <0.3.0)
~1.2.3  ->  >=1.2.3, <1.3.0      (~1 -> >=1.0.0, <2.0.0)
"""

from __future__ import annotations

__version__ = "0.2.0"


class RangeError(ValueError):
    """A range that is neither caret nor tilde, or has a malformed version."""


def _numbers(text: str) -> list[int]:
    try:
        numbers = [int(part) for part in text.split(".")]
    except ValueError:
        raise RangeError(f"bad version {text!r}") from None
    if not 1 <= len(numbers) <= 3:
        raise RangeError(f"bad version {text!r}")
    return numbers


def expand(text: str) -> list[str]:
    """The comparisons a caret or tilde range stands for."""
    operator, rest = text[:1], text[1:].strip()
    numbers = _numbers(rest)
    low = ".".join(str(n) for n in numbers + [0] * (3 - len(numbers)))
    if operator == "^":
        first = next((i for i, n in enumerate(numbers) if n != 0), len(numbers) - 1)
    elif operator == "~":
        first = min(1, len(numbers) - 1) if len(numbers) > 1 else 0
    else:
        raise RangeError(f"{text!r} is not a caret (^) or tilde (~) range")
    high = numbers[: first + 1]
    high[-1] += 1
    high += [0] * (3 - len(high))
    return [f">={low}", f"<{'.'.join(str(n) for n in high)}"]
