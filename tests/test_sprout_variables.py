"""Every `SPROUT_*` variable sprout reads is checked where it is read: a malformed value
ends the `sprout` command with one line naming the variable and what fits, exit code 2,
whether or not the command needed its value.

`READ` lists them; `test_every_variable_sprout_reads_is_listed` reads src/sprout for the
variables it reads from the environment, so a new one cannot go unchecked, and each is read
by one module only (the one that checks it). Variables only the tests set
(SPROUT_REQUIRE_SANDBOX, SPROUT_HARBOR_PYTHON) are read under tests/ alone.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.errors import SproutError
from sprout.models.llamacpp_process import find_llama_server
from tests.support.repo_paths import SPROUT_SOURCE

READ = {
    "SPROUT_BENCHMARKS": "cli.py",
    "SPROUT_CACHE": "durable.py",
    "SPROUT_ID_RANGE": "sandbox/jail/idmap.py",
    "SPROUT_LLAMA_SERVER": "models/llamacpp_process.py",
    "SPROUT_NETWORK_REFUSE": "sandbox/network/namespace.py",
    "SPROUT_STORE_FS": "sandbox/storefs/settings.py",
    "SPROUT_STORE_SIZE": "sandbox/storefs/settings.py",
}
"""Each variable sprout reads -> the one module (under src/sprout) that reads and checks it."""


def _environment_reads(path: Path) -> set[str]:
    """The `SPROUT_*` names `path` reads from the environment (`os.environ.get`,
    `os.getenv`, `os.environ[...]`), given as a literal or a module-level constant."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name) and isinstance(node.value.value, str)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        name = _variable_read(node)
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            found.add(name.value)
        elif isinstance(name, ast.Name) and name.id in constants:
            found.add(constants[name.id])
    return {variable for variable in found if variable.startswith("SPROUT_")}


def _variable_read(node: ast.AST) -> ast.expr | None:
    """What names the variable `node` reads, when it reads one from the environment."""
    if isinstance(node, ast.Call) and node.args:
        return node.args[0] if ast.unparse(node.func).endswith(("environ.get", "getenv")) else None
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        return node.slice if ast.unparse(node.value).endswith("environ") else None
    return None


def test_every_variable_sprout_reads_is_listed():
    readers: dict[str, set[str]] = {}
    for path in sorted(SPROUT_SOURCE.rglob("*.py")):
        for variable in _environment_reads(path):
            readers.setdefault(variable, set()).add(str(path.relative_to(SPROUT_SOURCE)))
    assert readers == {variable: {module} for variable, module in READ.items()}


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine cache of the test's own: nothing a refused command might make lands in
    the suite's."""
    monkeypatch.setenv("SPROUT_CACHE", str(tmp_path / "cache"))
    return tmp_path


def _doctor(tmp: Path) -> list[str]:
    return ["doctor", "--store", str(tmp / "store")]


def _run(tmp: Path) -> list[str]:
    return ["run", str(tmp / "tasks"), "--model", "oracle", "--out", str(tmp / "run")]


CASES: list[tuple[str, str, Callable[[Path], list[str]], str]] = [
    (
        "SPROUT_STORE_FS",
        "maybe",
        _doctor,
        "sprout doctor: SPROUT_STORE_FS: expected auto or off, got 'maybe'",
    ),
    (
        "SPROUT_STORE_SIZE",
        "banana",
        _doctor,
        "sprout doctor: SPROUT_STORE_SIZE: expected a size such as 64G or 512M, got 'banana'",
    ),
    (
        "SPROUT_STORE_SIZE",
        "10M",
        _doctor,
        "sprout doctor: SPROUT_STORE_SIZE: '10M' is under the smallest store (256M)",
    ),
    (
        "SPROUT_ID_RANGE",
        "1073741824",
        _doctor,
        "sprout doctor: SPROUT_ID_RANGE: expected BASE:COUNT, an unprivileged range of host ids "
        "(e.g. 1073741824:65536), got '1073741824'",
    ),
    (
        "SPROUT_ID_RANGE",
        "0:65536",
        _doctor,
        "sprout doctor: SPROUT_ID_RANGE: expected BASE:COUNT, an unprivileged range of host ids "
        "(e.g. 1073741824:65536), got '0:65536'",
    ),
    (
        "SPROUT_NETWORK_REFUSE",
        "198.51.100.7,gpu1",
        _run,
        "sprout run: SPROUT_NETWORK_REFUSE: expected IPv4 addresses or ranges, comma-separated "
        "(e.g. 198.51.100.7,10.0.0.0/8), got 'gpu1'",
    ),
    (
        "SPROUT_CACHE",
        "~/cache",
        lambda tmp: ["image", "list"],
        "sprout image list: SPROUT_CACHE: expected an absolute path, got '~/cache'",
    ),
    (
        "SPROUT_BENCHMARKS",
        "/nonexistent/benchmarks",
        lambda tmp: ["bench", "sandbox"],
        "sprout bench: SPROUT_BENCHMARKS: /nonexistent/benchmarks is not a folder (expected the "
        "benchmarks/ folder of a sprout-rl checkout)",
    ),
]
"""(variable, a malformed value, the command that reads it, the line it ends with)."""


@pytest.mark.parametrize(
    ("variable", "value", "argv", "line"), CASES, ids=[f"{c[0]}={c[1]}" for c in CASES]
)
def test_a_malformed_variable_ends_the_command_in_one_line(
    variable: str,
    value: str,
    argv: Callable[[Path], list[str]],
    line: str,
    own_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    monkeypatch.setenv(variable, value)
    assert main(argv(own_cache)) == 2
    assert capsys.readouterr().err == line + "\n"
    assert not (own_cache / "run").exists() and not (own_cache / "cache").exists()


def test_a_cache_that_is_a_file_is_refused(own_cache: Path, monkeypatch, capsys):
    afile = own_cache / "cache-file"
    afile.write_text("")
    monkeypatch.setenv("SPROUT_CACHE", str(afile))
    assert main(["image", "list"]) == 2
    assert capsys.readouterr().err == (
        f"sprout image list: SPROUT_CACHE: {afile} is not a folder (expected the cache's "
        "folder, or where to make it)\n"
    )


def test_a_llama_server_that_is_no_executable_is_refused(tmp_path: Path, monkeypatch):
    """Read by `sprout train --rollout-server llamacpp` once it has a model to serve, too
    late for a quick command: the error is the one that command prints."""
    for named in (tmp_path / "missing", tmp_path):
        monkeypatch.setenv("SPROUT_LLAMA_SERVER", str(named))
        with pytest.raises(SproutError) as refused:
            find_llama_server()
        assert refused.value.exit_code == 2 and refused.value.input_name == "SPROUT_LLAMA_SERVER"
        assert str(refused.value) == (
            f"SPROUT_LLAMA_SERVER: {named} is not an executable file (expected the path of a "
            "llama-server binary, as scripts/llama-server prints it)"
        )
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv("SPROUT_LLAMA_SERVER", str(binary))
    assert find_llama_server() == binary
    monkeypatch.setenv("SPROUT_LLAMA_SERVER", "")  # as unset: `make test` gives it so
    find_llama_server()
