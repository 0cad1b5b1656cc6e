import datetime

import pytest
from logwatch.reader import read_lines

LINES = [
    '192.0.2.1 - bob [01/Feb/2024:09:15:00 +0000] "GET /a HTTP/1.1" 200 10',
    "",
    '192.0.2.2 - - [01/Feb/2024:09:45:00 +0000] "GET /b HTTP/1.1" 404 -',
]


def test_reads_every_non_blank_line():
    records = read_lines(LINES)
    assert [(r.host, r.user, r.path, r.status, r.size) for r in records] == [
        ("192.0.2.1", "bob", "/a", 200, 10),
        ("192.0.2.2", None, "/b", 404, None),
    ]
    assert records[0].time == datetime.datetime(2024, 2, 1, 9, 15, tzinfo=datetime.UTC)


def test_malformed_line_is_an_error():
    with pytest.raises(ValueError, match="Common Log Format"):
        read_lines(["not a log line"])
