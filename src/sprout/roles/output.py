"""Structured output: the one JSON object a role's reply holds, checked against a schema.

Every refusal is an `OutputError` whose message is written for the model: it is
sent back verbatim on a retry, so it says exactly what was wrong and what fits.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from sprout.errors import SproutError
from sprout.fences import fenced_blocks

MAX_REPLY_CHARS = 60_000
"""Longer replies are refused unread: no valid answer needs this much, and parsing
(and echoing back) an arbitrarily large reply would make the retry unbounded."""

MAX_PROBLEMS = 4
"""Schema problems named per refusal; the rest are counted."""

Schema = TypeVar("Schema", bound=BaseModel)


class OutputError(SproutError, ValueError):
    """A reply that breaks the output contract; the message tells the model what to fix."""


def json_object(text: str) -> dict[str, Any]:
    """The JSON object in `text`: a ```json (or bare ```) fence, the whole reply, or the span
    from its first `{` to its last `}` (prose or reasoning around a bare object)."""
    if len(text) > MAX_REPLY_CHARS:
        raise OutputError(
            f"the reply is {len(text)} characters long; answer with only the JSON object "
            f"(under {MAX_REPLY_CHARS} characters)"
        )
    fenced = [body for tag, body in fenced_blocks(text) if tag in ("json", "")]
    start, end = text.find("{"), text.rfind("}")
    spans = [*reversed(fenced), text.strip()]
    if 0 <= start < end:
        spans.append(text[start : end + 1])
    first_error: json.JSONDecodeError | None = None
    for span in spans:
        try:
            value = json.loads(span)
        except json.JSONDecodeError as error:
            first_error = first_error or error
            continue
        if isinstance(value, dict):
            return value
    if start < 0 or first_error is None:
        raise OutputError(
            "the reply holds no JSON object; answer with one JSON object, bare or in a "
            "```json block"
        )
    raise OutputError(
        f"the JSON object is invalid: {first_error.msg} at line {first_error.lineno} "
        f"column {first_error.colno}"
    )


def validate(schema: type[Schema], data: dict[str, Any]) -> Schema:
    """`data` as `schema`; an OutputError names each field that is missing or wrong."""
    try:
        return schema.model_validate(data)
    except ValidationError as error:
        raise OutputError(describe(error)) from None


def read_reply(text: str, schema: type[Schema]) -> Schema:
    """The reply's JSON object, validated against `schema`."""
    return validate(schema, json_object(text))


def describe(error: ValidationError) -> str:
    """Pydantic's errors as one line the model can act on: `branches[1].boundary: ...`."""
    problems = []
    for item in error.errors()[:MAX_PROBLEMS]:
        where = _location(item["loc"]) or "the object"
        if item["type"] == "missing":
            problems.append(f"{where}: missing (required)")
        else:
            given = repr(item["input"])
            given = given if len(given) <= 60 else given[:57] + "..."
            problems.append(f"{where}: {item['msg']}, got {given}")
    more = len(error.errors()) - MAX_PROBLEMS
    if more > 0:
        problems.append(f"and {more} more problem{'s' if more > 1 else ''}")
    return "; ".join(problems)


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text
