"""A `llama-server` process that sprout starts, waits for, restarts and stops.

For rollouts whose server sprout owns: the tests and `sprout bench rollouts`
start one on loopback, and an on-policy loop restarts it with the weights of
the latest step, converted to GGUF by `convert_to_gguf`. The binary is the one
`scripts/llama-server` builds once per machine (or `SPROUT_LLAMA_SERVER`), and
the converter is the one kept beside it (`convert/`), so both come from one
llama.cpp source; the process is stopped by its own id, however the caller ends.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from sprout.durable import cache_dir
from sprout.errors import SproutError

START_TIMEOUT_S = 180.0


class ServerError(SproutError, RuntimeError):
    """A llama-server that cannot be found, started, or that died."""


def find_llama_server() -> Path | None:
    """`SPROUT_LLAMA_SERVER`, else the newest binary `scripts/llama-server` cached; None
    when there is none. A setting that names no executable file is refused, not taken
    for "none built": that would say to build one, or skip what needs it, over a typo."""
    named = os.environ.get("SPROUT_LLAMA_SERVER", "")
    if named:
        if not os.path.isfile(named) or not os.access(named, os.X_OK):
            raise ServerError(
                f"SPROUT_LLAMA_SERVER: {named} is not an executable file (expected the path "
                "of a llama-server binary, as scripts/llama-server prints it)"
            )
        return Path(named)
    built = sorted((cache_dir() / "tools").glob("llama-server-*/llama-server"))
    return built[-1] if built else None


class ConversionError(ServerError):
    """A model folder that llama.cpp's converter could not turn into a GGUF file."""


GGUF_TYPES = ("f32", "f16")
"""Unquantised output types: the served weights are the saved ones, to rounding."""


def find_converter(binary: str | os.PathLike[str] | None = None) -> Path | None:
    """llama.cpp's `convert_hf_to_gguf.py` kept beside `binary` (default: the one
    `find_llama_server` finds) in `convert/`, as `scripts/llama-server` keeps it."""
    found = Path(binary) if binary else find_llama_server()
    if found is None:
        return None
    script = found.parent / "convert" / "convert_hf_to_gguf.py"
    return script if script.is_file() else None


def convert_to_gguf(
    folder: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    outtype: str = "f32",
    binary: str | os.PathLike[str] | None = None,
) -> Path:
    """Write the Hugging Face model `folder` as the GGUF file `out` with the converter kept
    beside the server binary, run by this interpreter with that source's gguf-py (and the
    sentencepiece it imports) first on the path; the file appears whole or not at all."""
    if outtype not in GGUF_TYPES:
        raise ConversionError(f"GGUF type {outtype!r}: expected one of {', '.join(GGUF_TYPES)}")
    script = find_converter(binary)
    if script is None:
        raise ConversionError(
            "no llama.cpp converter (convert/convert_hf_to_gguf.py beside llama-server): "
            "run scripts/llama-server, which keeps it with the binary"
        )
    out = Path(out)
    partial = out.with_name(out.name + ".partial")
    tools = script.parent
    path = [str(tools / "gguf-py"), str(tools / "site"), os.environ.get("PYTHONPATH", "")]
    command = [sys.executable, str(script), str(folder), "--outfile", str(partial)]
    done = subprocess.run(
        [*command, "--outtype", outtype],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise ConversionError(f"{folder}: llama.cpp's converter failed: {_why(done)}")
    partial.replace(out)
    return out


def _why(done: subprocess.CompletedProcess[str]) -> str:
    """The converter's exception line (its progress bars may print after it), else its
    last line of output, else its exit code."""
    lines = done.stderr.strip().splitlines()
    errors = [line for line in lines if "Error: " in line or "Exception: " in line]
    return (errors or lines or [f"exit code {done.returncode}"])[-1].strip()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _dying_with_us() -> list[str]:
    """util-linux's `setpriv --pdeathsig TERM` (where it is installed), which execs the
    server with a parent-death signal: it ends with the thread that started it even when
    that process is killed or leaves with `os._exit` (a second Ctrl-C), where no `stop` runs."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv else []


class LlamaServer:
    """`llama-server -m MODEL` on a loopback port; a context manager that stops it."""

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        log: str | os.PathLike[str],
        binary: str | os.PathLike[str] | None = None,
        options: Sequence[str] = ("-c", "4096", "-np", "1"),
    ) -> None:
        found = Path(binary) if binary else find_llama_server()
        if found is None or not os.access(found, os.X_OK):
            raise ServerError(
                "no llama-server binary: build one with scripts/llama-server (cached per "
                "machine) or name it in SPROUT_LLAMA_SERVER"
            )
        self.binary = found
        self.model = Path(model)
        self.log = Path(log)
        self.options = tuple(options)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        """Start the server and wait until it answers `/health`; its base URL."""
        if not self.model.is_file():
            raise ServerError(f"{self.model}: no such model file (a GGUF file)")
        command = [*_dying_with_us(), str(self.binary), "-m", str(self.model)]
        command += ["--host", "127.0.0.1", "--port", str(self.port), *self.options]
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._healthy():
            if self.process.poll() is not None:
                raise ServerError(f"llama-server exited {self.process.returncode}: {self._tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise ServerError(
                    f"llama-server not ready in {START_TIMEOUT_S:g} s: {self._tail()}"
                )
            time.sleep(0.2)
        return self.url

    def restart(self, model: str | os.PathLike[str] | None = None) -> str:
        """Stop the server and start it again (on `model`, when given) on the same port."""
        self.stop()
        if model is not None:
            self.model = Path(model)
        return self.start()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as answer:
                return bool(answer.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def _tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(text.strip().splitlines()[-lines:])

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
