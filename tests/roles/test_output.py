"""Reading a role's JSON object out of a reply, and the problems it names when it cannot."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from sprout.roles.output import MAX_REPLY_CHARS, OutputError, json_object, read_reply


class Shape(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    name: str
    sizes: list[int]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '  \n{"a": 1}\n',
        'Here it is:\n\n```json\n{"a": 1}\n```\n',
        'Here it is:\n\n```\n{"a": 1}\n```',
        'Thinking about {braces}... no.\n```json\n{"a": 0}\n```\nFixed:\n```json\n{"a": 1}\n```',
        '<think>the answer is short</think>\n{"a": 1}',
        'Sure! {"a": 1} is my answer.',
    ],
)
def test_an_object_is_read_bare_fenced_or_inside_prose(text: str):
    assert json_object(text) == {"a": 1}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("I think boundary 3 is best.", "holds no JSON object"),
        ("[1, 2, 3]", "holds no JSON object"),
        ('{"a": 1,}', "the JSON object is invalid: Expecting property name"),
        ('```json\n{"a": [1, 2}\n```', "invalid"),
        ("x" * (MAX_REPLY_CHARS + 1), f"{MAX_REPLY_CHARS + 1} characters long"),
    ],
)
def test_replies_without_a_usable_object_are_refused_with_the_reason(text: str, problem: str):
    with pytest.raises(OutputError, match=problem):
        json_object(text)


def test_schema_problems_name_every_field_with_what_was_given():
    with pytest.raises(OutputError) as refused:
        read_reply('{"sizes": [1, "two", true]}', Shape)
    message = str(refused.value)
    assert "name: missing (required)" in message
    assert "sizes[1]: Input should be a valid integer, got 'two'" in message
    assert "sizes[2]: Input should be a valid integer, got True" in message


def test_extra_fields_are_ignored_and_long_inputs_are_cut_in_the_message():
    assert read_reply('{"name": "n", "sizes": [], "notes": "x"}', Shape).name == "n"
    with pytest.raises(OutputError) as refused:
        read_reply('{"name": "n", "sizes": "' + "y" * 5000 + '"}', Shape)
    assert str(refused.value).startswith("sizes: Input should be a valid list, got 'yyy")
    assert len(str(refused.value)) < 200
