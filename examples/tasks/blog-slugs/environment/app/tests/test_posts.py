import datetime

import pytest
from quillsite import PostError, parse_post


def test_parse_reads_fields_and_body():
    post = parse_post("title: Hello\ndate: 2024-01-31\ntags: a, b\n\nFirst.\n\nSecond.\n")
    assert post.title == "Hello"
    assert post.date == datetime.date(2024, 1, 31)
    assert post.tags == ("a", "b")
    assert post.body == "First.\n\nSecond."


def test_missing_date_is_named():
    with pytest.raises(PostError, match="date"):
        parse_post("title: Hello\n\nBody\n")
