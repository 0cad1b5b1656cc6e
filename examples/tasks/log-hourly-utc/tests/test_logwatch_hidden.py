"""Hidden tests of log-hourly-utc: UTC hours, every 5xx, IPv6 clients."""

from logwatch import hour_of, hourly, server_errors
from logwatch.cli import main
from logwatch.reader import read_lines


def line(when, status=200, host="192.0.2.1", path="/"):
    return f'{host} - - [{when}] "GET {path} HTTP/1.1" {status} 10'


def test_hours_are_utc_hours():
    records = read_lines([line("10/Mar/2024:14:30:00 +0100"), line("10/Mar/2024:13:45:00 +0000")])
    assert hourly(records) == {"2024-03-10 13:00": 2}


def test_negative_offsets_cross_midnight():
    (record,) = read_lines([line("09/Mar/2024:23:30:00 -0500")])
    assert hour_of(record) == "2024-03-10 04:00"


def test_half_hour_offsets():
    (record,) = read_lines([line("10/Mar/2024:10:15:00 +0530")])
    assert hour_of(record) == "2024-03-10 04:00"


def test_server_errors_are_every_5xx():
    statuses = [200, 404, 499, 500, 502, 503, 599]
    records = read_lines([line("10/Mar/2024:10:00:00 +0000", status) for status in statuses])
    assert [record.status for record in server_errors(records)] == [500, 502, 503, 599]


def test_ipv6_clients_are_read():
    (record,) = read_lines([line("10/Mar/2024:10:00:00 +0000", host="2001:db8::42")])
    assert record.host == "2001:db8::42"


def test_cli_hourly_report(capsys):
    assert main(["/app/logs/access.log"]) == 0
    assert capsys.readouterr().out == "2024-03-10 13:00  4\n2024-03-10 14:00  2\n"


def test_cli_errors_report(capsys):
    assert main(["/app/logs/access.log", "--errors"]) == 0
    assert capsys.readouterr().out == "2024-03-10 13:00  1\n2024-03-10 14:00  1\n"
