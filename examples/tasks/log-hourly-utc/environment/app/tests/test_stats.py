from logwatch import client_errors, hourly, server_errors, top_paths
from logwatch.reader import read_lines

LINES = [
    '192.0.2.1 - - [01/Feb/2024:09:15:00 +0000] "GET /a HTTP/1.1" 200 10',
    '192.0.2.2 - - [01/Feb/2024:09:45:00 +0000] "GET /b HTTP/1.1" 404 -',
    '192.0.2.3 - - [01/Feb/2024:10:05:00 +0000] "GET /a HTTP/1.1" 500 7',
]


def test_hourly_counts_requests_per_hour():
    assert hourly(read_lines(LINES)) == {"2024-02-01 09:00": 2, "2024-02-01 10:00": 1}


def test_top_paths():
    assert top_paths(read_lines(LINES), 1) == [("/a", 2)]


def test_errors_by_class():
    records = read_lines(LINES)
    assert [r.status for r in client_errors(records)] == [404]
    assert [r.status for r in server_errors(records)] == [500]
