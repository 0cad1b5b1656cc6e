"""The servers of the network tests' world, each a process the test starts inside a network
namespace it made: every hit is written to a log on the host side, so what reached a server
is read there, never from an exit code inside a sandbox.

    python net_canary.py http ADDRESS PORT LOG      an HTTP server; logs each request path
    python net_canary.py files ADDRESS PORT DIR LOG  an HTTP server of DIR's files; logs paths
    python net_canary.py unix NAME LOG              a server on the abstract unix socket @NAME
    python net_canary.py dns ADDRESS LOG NAME=IP... a resolver answering A queries for NAMEs,
                                                    NXDOMAIN for others; logs each name asked
"""

from __future__ import annotations

import signal
import socket
import socketserver
import struct
import sys
from functools import partial
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

READY = "ready"
LIFETIME_S = 600
"""No server outlives this, whatever happens to its test."""


def _log(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def serve_http(address: str, port: int, log: str) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            _log(log, self.path)
            body = b"CANARY " + address.encode() + b"\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in address else socket.AF_INET

        def server_bind(self) -> None:  # HTTPServer's asks DNS for its own name: none here
            socketserver.TCPServer.server_bind(self)

    server = Server((address, port), Handler)
    print(READY, flush=True)
    server.serve_forever()


def serve_files(address: str, port: int, directory: str, log: str) -> None:
    class Handler(SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            _log(log, self.path)
            super().do_GET()

        def log_message(self, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        def server_bind(self) -> None:  # no DNS for its own name
            socketserver.TCPServer.server_bind(self)

    server = Server((address, port), partial(Handler, directory=directory))
    print(READY, flush=True)
    server.serve_forever()


def serve_unix(name: str, log: str) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("\0" + name)
    server.listen()
    print(READY, flush=True)
    while True:
        connection, _ = server.accept()
        _log(log, "connected")
        connection.close()


def _question(query: bytes) -> tuple[str, int]:
    """The name of a DNS query's one question, and where the question ends."""
    labels, offset = [], 12
    while query[offset]:
        length = query[offset]
        labels.append(query[offset + 1 : offset + 1 + length].decode())
        offset += 1 + length
    return ".".join(labels).lower(), offset + 5


def serve_dns(address: str, log: str, names: dict[str, str]) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind((address, 53))
    print(READY, flush=True)
    while True:
        query, peer = server.recvfrom(512)
        name, end = _question(query)
        qtype = struct.unpack("!H", query[end - 4 : end - 2])[0]
        _log(log, name)
        known = name in names and qtype == 1
        flags = 0x8180 if name in names else 0x8183  # a response; NXDOMAIN for other names
        header = query[:2] + struct.pack("!HHHHH", flags, 1, 1 if known else 0, 0, 0)
        answer = b""
        if known:
            ip = socket.inet_aton(names[name])
            answer = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + ip
        server.sendto(header + query[12:end] + answer, peer)


def main(argv: list[str]) -> None:
    signal.alarm(LIFETIME_S)
    kind = argv[0]
    if kind == "http":
        serve_http(argv[1], int(argv[2]), argv[3])
    elif kind == "files":
        serve_files(argv[1], int(argv[2]), argv[3], argv[4])
    elif kind == "unix":
        serve_unix(argv[1], argv[2])
    elif kind == "dns":
        serve_dns(argv[1], argv[2], dict(pair.split("=", 1) for pair in argv[3:]))
    else:
        raise SystemExit(f"unknown server kind {kind!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
