"""The messages the docs quote are the ones sprout prints today, and stay so.

The convention. A quoted message is text of a doc (docs/*.md, README.md) that shows a line
sprout prints: an error above all, and the warnings, notes and progress lines the docs
show as examples. Each is an entry of QUOTES: the doc, the quote as the doc has it (its
line breaks folded into spaces, inner backticks kept), and the way to produce it today:
loading the bad task, running the command, calling the function with the bad input. In
a quote, `…` and `...` stand for what varies (paths, digests, the rest of a long line),
and `stands_for` names what the quote's example values (an id, a pid, a path) are in
this production; every other part of the quote must be in the produced text, in order,
whitespace folded. So an edited quote fails (it is no longer in its doc), and so does a
changed message (the produced text no longer holds the quote).

`test_every_message_shaped_span_is_listed` keeps the list honest: every backticked span
of the docs shaped like one of sprout's lines (`INPUT: PROBLEM`) is in QUOTES or in
NOT_MESSAGES, which says what else it is (a format, a table's syntax, another program's
message). Quotes of other shapes are listed by hand: each one found is in QUOTES.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from sprout import cli
from sprout.errors import SproutError
from sprout.tasks.discover import load_tasks
from sprout.tree import RunMeta
from tests.support.repo_paths import REPO
from tests.support.taskfolders import calc_task, write_task
from tests.support.verifier_logs import UV_NO_PYTHON


@dataclass(frozen=True)
class Produced:
    """What sprout printed, and what the quote's example values stand for in it."""

    text: str
    stands_for: dict[str, str] = field(default_factory=dict)


@dataclass
class Ctx:
    """Where a producer works: its own folder, and a monkeypatch undone after it."""

    tmp: Path
    monkeypatch: pytest.MonkeyPatch


Producer = Callable[[Ctx], "str | Produced"]


@dataclass(frozen=True)
class Quote:
    """One quoted message: where, as the doc writes it, and how sprout prints it today."""

    doc: str
    text: str
    produce: Producer
    sandbox: bool = False
    """It builds a base layer or runs a sandbox (over the host image)."""


def folded(text: str) -> str:
    return " ".join(text.split())


def parts(quote: str) -> list[str]:
    """The fixed parts of `quote`: what is left around its `…` and `...`."""
    return [part for part in re.split(r"…|\.\.\.", folded(quote)) if part.strip()]


def holds(produced: str, quote: str) -> bool:
    """Whether `produced` holds each fixed part of `quote`, in order."""
    text, at = folded(produced), 0
    for part in parts(quote):
        found = text.find(part.strip(), at)
        if found < 0:
            return False
        at = found + len(part.strip())
    return True


# --- how producers run sprout ---------------------------------------------------------


def command(argv: list[str]) -> str:
    """What `sprout ARGV` prints (stdout, then stderr), run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        cli.main(argv)
    return out.getvalue() + err.getvalue()


def raised(call: Callable[[], object]) -> str:
    """The line of the SproutError `call` raises (exit code 2 or the command's own)."""
    with pytest.raises(SproutError) as error:
        call()
    return str(error.value)


def as_the_command_says(c: Ctx, argv: list[str], error: Exception) -> str:
    """What `sprout ARGV` prints when its work raises `error`: cli.main's own line, the
    command's function (found by parsing ARGV) replaced by one that raises it."""
    real = cli.build_parser

    def fail(_args: argparse.Namespace) -> int:
        raise error

    def parser() -> argparse.ArgumentParser:
        built = real()
        parse = built.parse_args

        def parse_args(args: Sequence[str] | None = None) -> argparse.Namespace:
            found = parse(args)
            found.func = fail
            return found

        built.parse_args = parse_args  # type: ignore[method-assign,assignment]
        return built

    c.monkeypatch.setattr(cli, "build_parser", parser)
    return command(argv)


def loaded(c: Ctx, name: str, **files: object) -> str:
    """The error line (else the warnings) of task `name`, written with `files` as
    `write_task` takes them, when a run loads it."""
    files.setdefault("instruction", "Fix it.\n")
    files.setdefault("tests", {"test.sh": "exit 1\n"})
    files.setdefault("dockerfile", "FROM python:3.11-slim\n")
    files.setdefault("solve", "true\n")
    write_task(c.tmp / "tasks", name, **files)  # type: ignore[arg-type]
    found = load_tasks([c.tmp / "tasks" / name])
    return "\n".join(found.errors or [w for t in found.tasks for w in t.warnings])


@contextlib.contextmanager
def process_named(words: list[str], code: str) -> Iterator[subprocess.Popen[str]]:
    """A live process that runs `code` (until its stdin closes, once it printed "ready")
    and whose command line reads `sprout WORDS...` to whoever lists it."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sys\n{code}\nprint('ready', flush=True)\nsys.stdin.read()",
            *words,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    try:
        yield process
    finally:
        process.communicate("")


# --- docs/tasks.md ----------------------------------------------------------------------


def bad_network(c: Ctx) -> Produced:
    line = loaded(c, "fix-calc", toml='[sprout]\nnetwork = "maybe"\n')
    return Produced(line, {"…/task.toml": str(c.tmp / "tasks/fix-calc/task.toml")})


def bad_memory(c: Ctx) -> str:
    return loaded(c, "t", toml="[environment]\nmemory_mb = 0\n")


JUDGE = '[verifier]\nenv = { JUDGE_API_KEY = "${OPENAI_API_KEY}" }\n'


def judge_key_taken(c: Ctx) -> str:
    c.monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return loaded(c, "t", toml=JUDGE)


def judge_key_unset(c: Ctx) -> str:
    c.monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return loaded(c, "t", toml=JUDGE)


def image_pulled(c: Ctx) -> str:
    """A run's reason line for an image it pulled (the registry's answer stubbed)."""
    from sprout.images import ImageCache
    from sprout.tasks.setup.image_choice import choose_task_images

    pulled = SimpleNamespace(source={"registry": "docker.io", "digest": "sha256:" + "ab" * 32})
    c.monkeypatch.setattr("sprout.images.names.pull", lambda *_a, **_k: pulled)
    write_task(
        c.tmp / "tasks",
        "regex-log",
        instruction="x\n",
        tests={"test.sh": "exit 1\n"},
        dockerfile="FROM alexgshaw/regex-log:20251031\n",
    )
    [task] = load_tasks([c.tmp / "tasks" / "regex-log"]).tasks
    said: list[str] = []
    with contextlib.suppress(Exception):  # placing a stub image is not what is said here
        choose_task_images([task], cache=ImageCache(c.tmp / "images"), say=said.append)
    return said[0]


def unreadable_layer(c: Ctx) -> str:
    from sprout.images import ImageCache
    from sprout.images.oci import import_image
    from tests.support.oci_archives import oci_layout

    layout = oci_layout(c.tmp / "layout", [b"this is no tar, compressed or not"])
    return raised(lambda: import_image(layout, "acme/tool:1", cache=ImageCache(c.tmp / "i")))


def pull_finished(c: Ctx) -> str:
    from sprout.images.pull import pulled_line

    digest = "sha256:" + "3f2a" * 16
    return pulled_line("acme/app:1", digest, 7, 812_400_000, 2, 41.0)


SKOPEO_NO_HOST = (
    'time="2025-01-01T00:00:00Z" level=fatal msg="Error parsing image name '
    '\\"docker://node:20\\": pinging container registry registry-1.docker.io: Get '
    '\\"https://registry-1.docker.io/v2/\\": dial tcp: lookup registry-1.docker.io: no such host"'
)


def no_registry(c: Ctx) -> str:
    from sprout.images import ImageCache
    from sprout.images.names import choose_image
    from sprout.images.skopeo import registry_error

    def unreachable(*_args: object, **_kwargs: object) -> None:
        raise registry_error(SKOPEO_NO_HOST, "node:20", "docker.io")

    c.monkeypatch.setattr("sprout.images.names.pull", unreachable)
    return raised(lambda: choose_image("node:20", "pull", ImageCache(c.tmp / "images")))


def corrupt_blob(c: Ctx) -> str:
    from sprout.images.skopeo import registry_error

    stderr = (
        'time="2025-01-01T00:00:00Z" level=fatal msg="writing blob: Digest did not match, '
        'expected sha256:aaaa, got sha256:bbbb"'
    )
    return str(registry_error(stderr, "acme/app:1", "registry.local:5000"))


def full_disk(c: Ctx) -> str:
    import errno

    from sprout.images.pull import disk_full

    return str(disk_full("acme/app:1", OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))))


def approximated(c: Ctx) -> str:
    from sprout.images.names import resolve_from

    request = resolve_from("python:3.12-slim")
    assert request is not None
    return request.approximation


def gc_keeps_image(c: Ctx) -> Produced:
    from sprout.images import ImageCache
    from sprout.images.oci import import_image
    from sprout.sandbox import LayerStore
    from sprout.sandbox.rootfs.notes import note_image
    from tests.support.oci_archives import layer, oci_layout

    c.monkeypatch.setenv("SPROUT_CACHE", str(c.tmp / "cache"))
    archive = oci_layout(c.tmp / "layout", [layer([("etc/os-release", b"ID=debian\n", {})])])
    image = import_image(archive, "debian:12", cache=ImageCache())
    store = LayerStore(c.tmp / "runs/a/layers", place=False)
    note_image(store.path, image.digest)
    said = command(["gc", "--keep-days", "0", "--images", "--dry-run"])
    return Produced(said, {"debian-...": image.digest, "/runs/a/layers": store.path})


TAKER = """
import sys
from sprout.images.shipped_tasks import shipped_root, taking
root, digest = shipped_root(), "3f9c" * 8
with taking(root, digest):
    (root / digest / "fix-git").mkdir(parents=True, exist_ok=True)
"""


def gc_keeps_a_copy_in_use(c: Ctx) -> Produced:
    c.monkeypatch.setenv("SPROUT_CACHE", str(c.tmp / "cache"))
    with process_named([], TAKER) as holder:  # `taking` holds the copy while it lives
        said = command(["gc", "--keep-days", "0", "--dry-run", "-v"])
    return Produced(said, {"4242": str(holder.pid)})


def gc_keeps_a_copy_used_lately(c: Ctx) -> str:
    from sprout.images.shipped_tasks import shipped_root

    c.monkeypatch.setenv("SPROUT_CACHE", str(c.tmp / "cache"))
    subprocess.run([sys.executable, "-c", TAKER], check=True)
    when = time.time() - 2 * 86400
    os.utime(shipped_root() / ("3f9c" * 8), (when, when))
    return command(["gc", "--dry-run", "-v"])


def unsupported_instruction(c: Ctx) -> str:
    return loaded(c, "t", dockerfile="FROM python:3.11-slim\n" + "\n" * 7 + "FOOBAR x\n")


def user_the_image_lacks(c: Ctx, dockerfile: str, verifier: str = "") -> str:
    """The error of building task "task" over the host image with `dockerfile`, its
    `[verifier]` table given the line `verifier`."""
    from sprout.sandbox import LayerStore
    from sprout.tasks import load_native
    from sprout.tasks.setup.checkpoint import base_checkpoint_of
    from tests.support.requirements import require_host_image

    require_host_image()
    folder = calc_task(c.tmp / "tasks", "task")
    (folder / "environment" / "Dockerfile").write_text(dockerfile)
    toml_path = folder / "task.toml"
    toml_path.write_text(toml_path.read_text().replace("[verifier]\n", f"[verifier]\n{verifier}\n"))
    store = LayerStore(c.tmp / "store")
    return raised(lambda: base_checkpoint_of(load_native(folder), store))


def user_line(c: Ctx) -> str:
    dockerfile = "FROM host\nWORKDIR /app\nCOPY calc.py .\nRUN true\n\n\nUSER ghost\n"
    return user_the_image_lacks(c, dockerfile)


def user_field(c: Ctx) -> str:
    return user_the_image_lacks(c, "FROM host\nWORKDIR /app\nCOPY calc.py .\n", 'user = "ghost"')


def summary(passed: int, failed: int, failure: str) -> str:
    from sprout.verify import diagnose
    from sprout.verify.types import TestResult

    tests = [TestResult(f"test_x::test_{n}", "passed") for n in range(passed)]
    tests.append(TestResult(failure, "failed", "AssertionError: assert 0.3 == 0.30000000000000004"))
    tests += [
        TestResult(f"test_y::test_{n}", "failed", "AssertionError") for n in range(failed - 1)
    ]
    return diagnose(tests, source="pytest-rA").summary


def uv_unfetchable(c: Ctx) -> str:
    from sprout.verify import uv

    failed = subprocess.CompletedProcess(["pip"], 1, "", "ERROR: No matching distribution found")
    c.monkeypatch.setattr(uv, "_pip", lambda _arguments: failed)
    return raised(lambda: uv._fetch("0.9.5", c.tmp / "uv"))


def offline_python(c: Ctx) -> str:
    from sprout.pipeline.task_check import verifier_crash
    from sprout.verify import diagnose

    crashed = diagnose([], source="reward:/logs/verifier/reward.txt", log=UV_NO_PYTHON, reward=0)
    return verifier_crash(crashed) or ""


def not_utf8(c: Ctx) -> str:
    return loaded(c, "t", instruction=b"Fix the\ncalc \xff add\n")


def folder_for_a_file(c: Ctx) -> str:
    write_task(c.tmp / "tasks", "t", instruction="x\n", tests={"test.sh": "exit 1\n"})
    (c.tmp / "tasks" / "t" / "task.toml").mkdir()
    return "\n".join(load_tasks([c.tmp / "tasks" / "t"]).errors)


def pipe_at_set_up(c: Ctx) -> str:
    from sprout.sandbox import LayerStore
    from sprout.tasks import load_native
    from sprout.tasks.setup.checkpoint import base_checkpoint_of
    from tests.support.requirements import require_host_image

    require_host_image()
    folder = calc_task(c.tmp / "tasks", "piped")
    context = folder / "environment"
    (context / "data").mkdir()
    (context / "Dockerfile").write_text("FROM host\nRUN true\n\nCOPY data /data\n")
    task = load_native(folder)
    os.mkfifo(context / "data" / "pipe")  # after loading, as a SWE-bench clone may hold one
    return raised(lambda: base_checkpoint_of(task, LayerStore(c.tmp / "store")))


def swebench_field(c: Ctx) -> Produced:
    from sprout.tasks.sources.swebench import load_swebench

    row = {
        "instance_id": "astropy__astropy-12907",
        "repo": "astropy/astropy",
        "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
        "problem_statement": "x",
        "test_patch": "",
        "FAIL_TO_PASS": 5,
        "PASS_TO_PASS": [],
    }
    rows = c.tmp / "data" / "dev.jsonl"
    rows.parent.mkdir()
    rows.write_text("\n".join(json.dumps({**row, "instance_id": f"other-{n}"}) for n in (1, 2)))
    rows.write_text(rows.read_text() + "\n" + json.dumps(row) + "\n")
    (c.tmp / "repos").mkdir()
    found = load_swebench(rows, repos=c.tmp / "repos")
    return Produced(str(found[2]), {"/data/dev.jsonl": str(rows)})


def swebench_pro_script(c: Ctx) -> Produced:
    from tests.support.swebench_pro_rows import pro_row, write_rows, write_run_scripts

    made = {"base": "a" * 40, "fix": "b" * 40, "patch": "", "test_patch": ""}
    rows = [pro_row(made, instance_id=f"other-{n}") for n in (1, 2)]
    rows.append(pro_row(made, instance_id="instance_acme__calc-1"))
    for row in rows:
        write_run_scripts(c.tmp / "data" / "run_scripts", str(row["instance_id"]))
    (c.tmp / "data" / "run_scripts" / "instance_acme__calc-1" / "parser.py").unlink()
    path = write_rows(c.tmp / "data" / "pro.jsonl", rows)
    return Produced("\n".join(load_tasks([path]).errors), {"/data": str(c.tmp / "data")})


def rebench_parser(c: Ctx) -> Produced:
    from tests.support.swerebench_rows import INSTALL_CONFIG, rebench_row, write_rows

    made = {"base": "a" * 40, "fix": "b" * 40, "patch": "", "test_patch": "x"}
    rows = [rebench_row(made, instance_id=f"other-{n}") for n in (1, 2)]
    rows.append(rebench_row(made, install_config={**INSTALL_CONFIG, "log_parser": "x"}))
    path = write_rows(c.tmp / "data" / "v2.jsonl", rows)
    return Produced("\n".join(load_tasks([path]).errors), {"/data": str(c.tmp / "data")})


def check_row_typo(c: Ctx) -> Produced:
    from sprout.pipeline.task_check import load_failure

    line = loaded(c, "typo", toml='[sprout]\nnetwork = "nope"\n')
    return Produced(load_failure(line).problem or "", {"/tasks/typo": str(c.tmp / "tasks/typo")})


def checked(c: Ctx, name: str, **kwargs: str) -> str:
    from sprout.pipeline.task_check import check_task
    from sprout.runfolder import RunFolder
    from sprout.tasks import load_native
    from tests.support.requirements import require_host_image

    require_host_image()
    run = RunFolder.create(c.tmp / "run")
    try:
        return (
            check_task(load_native(calc_task(c.tmp / "tasks", name, **kwargs)), run).problem or ""
        )
    finally:
        run.close()


def check_row_fixed(c: Ctx) -> str:
    from tests.support.taskfolders import FIXED

    return checked(c, "fixed", code=FIXED)


def check_row_oracle_fails(c: Ctx) -> str:
    from tests.support.taskfolders import CALC_SOLVE

    return checked(
        c, "off-by-one", solve=CALC_SOLVE.replace("s/a - b/a + b/", "s/a - b/a + b + 1/")
    )


def check_footer(c: Ctx) -> str:
    from sprout.commands.check_table import record_of, summary_line
    from sprout.pipeline.task_check import CheckResult

    results = [CheckResult("a"), *(CheckResult(n, problem="x") for n in "bcd")]
    return summary_line([record_of(result) for result in results])


def check_footer_from_file(c: Ctx) -> str:
    from sprout.commands.check_table import record_of, summary_line
    from sprout.pipeline.task_check import CheckResult

    results = [CheckResult("a"), CheckResult("b"), CheckResult("c", problem="x")]
    return summary_line([record_of(result) for result in results], 2, "check.jsonl")


# --- docs/sandbox.md --------------------------------------------------------------------


def image_not_in_cache(c: Ctx) -> Produced:
    from sprout.sandbox.rootfs.catalog import ImageCatalog, cached_image

    catalog = ImageCatalog(c.tmp / "images")
    return Produced(
        raised(lambda: cached_image("python:3.11-slim", catalog)), {"NAME": "python:3.11-slim"}
    )


def bad_store_size(c: Ctx) -> str:
    from sprout.sandbox.storefs.settings import settings

    c.monkeypatch.setenv("SPROUT_STORE_SIZE", "banana")
    return raised(settings)


# --- docs/run.md ------------------------------------------------------------------------


def retry_told(c: Ctx) -> Produced:
    from sprout.models.config import ModelConfig
    from sprout.models.openai_client import OpenAIModel
    from tests.support.chat_server import ChatServer, Reply

    with ChatServer() as server:
        server.replies.append(Reply(status=503, raw=b"<html>Service Unavailable</html>"))
        model = OpenAIModel(
            "m", base_url=server.base_url, api_key="k", options=ModelConfig(max_retries=2)
        )
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            model.complete([{"role": "user", "content": "hi"}])
    return Produced(err.getvalue(), {"http://": server.base_url.split("//")[0] + "//"})


def stopped_early(c: Ctx) -> str:
    """The halt's reason, after the words `sprout run` prints it with (its source's)."""
    from sprout.search.halt import Halt

    halt = Halt()
    dead = SimpleNamespace(status="error", fault="model", end_reason="http://gpu1: HTTP 503")
    while not halt.attempt_ended(dead):  # type: ignore[arg-type]
        pass
    printed = (REPO / "src/sprout/commands/run.py").read_text()
    assert 'print(f"sprout run: stopped early: {halt.reason}"' in printed
    return f"sprout run: stopped early: {halt.reason}"


def swept(c: Ctx) -> str:
    import secrets

    from sprout.runfolder import RunFolder

    run = RunFolder.create_new(c.tmp / "run")
    run.tree.update_meta(RunMeta(settings={"model": "oracle"}))
    run.close()
    layers = c.tmp / "run" / "layers"
    dead = subprocess.Popen(["true"])
    dead.wait()
    layer = secrets.token_hex(5)
    (layers / "h" / layer).write_text(json.dumps({"pid": dead.pid, "start": "1"}))
    (layers / "l" / layer).mkdir(parents=True)
    (layers / "l" / layer / "f").write_bytes(b"x" * 200_000)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        RunFolder.resume(c.tmp / "run").close()
    return err.getvalue()


def in_use_by_a_run(c: Ctx) -> Produced:
    from sprout.runfolder import RunFolder

    run = RunFolder.create_new(c.tmp / "run")
    run.tree.update_meta(RunMeta(settings={"model": "oracle"}))
    run.close()
    holding = (
        f"from sprout.runfolder import RunFolder\nrun = RunFolder.resume({str(c.tmp / 'run')!r})"
    )
    with process_named(["sprout", "run", "tasks", "--out", "run"], holding) as holder:
        line = raised(lambda: RunFolder.resume(c.tmp / "run"))
    return Produced(line, {"4242": str(holder.pid)})


def in_use_by_a_viewer(c: Ctx, shown: str) -> Produced:
    from sprout.runfolder import RunFolder

    RunFolder.create_new(c.tmp / "run").close()
    holding = (
        "from sprout.runfolder import RunFolder\n"
        f"run = RunFolder.open({str(c.tmp / 'run')!r})\n"
        "run.layers.claim()"
    )
    with process_named(["sprout", "view", shown, "--port", "8123"], holding) as holder:
        said = command(["gc", str(c.tmp / "run")])
    return Produced(said, {"4242": str(holder.pid)})


def nothing_to_resume(c: Ctx) -> str:
    from sprout.runfolder import RunFolder

    return raised(lambda: RunFolder.resume(c.tmp / "empty"))


def not_rebuilt(c: Ctx) -> str:
    """The reason a lost branch ends with once its calls, run again, exited otherwise: the
    search's own (`recover`), over stubs of the tree and of the task's sandboxes; the lost
    checkpoint's reason is the cluster's line (its end checked in its source)."""
    from sprout.sandbox.replay import Rebuilt, ReplayCall, _diverged
    from sprout.search.recover import recover

    host = (REPO / "src/sprout/cluster/host.py").read_text()
    assert '; it was lost with its node"' in host
    lost = SimpleNamespace(
        id=7,
        kind="branch",
        end_reason="checkpoint c3: in none of the stores ...; it was lost with its node",
    )
    ended: list[str] = []
    tree = SimpleNamespace(
        root_of=lambda _a: SimpleNamespace(base_checkpoint="c0"),
        path=lambda _a: [],
        meta=RunMeta,
        update_meta=lambda _changes: None,
        checkpoint=lambda _a: "c3",
        finish_attempt=lambda _id, _status, reason, fault: ended.append(reason),
        attempt=lambda _id: lost,
    )
    diverged = _diverged(3, ReplayCall("pytest", 1, False, ""), 0)
    search = SimpleNamespace(
        tree=tree,
        task=SimpleNamespace(id="t"),
        method=SimpleNamespace(name="sprout"),
        base_checkpoint="c0",
        sandboxes=SimpleNamespace(rebuild=lambda *_a: Rebuilt(5, 0, diverged)),
        actor=SimpleNamespace(config=SimpleNamespace(call_timeout_s=60)),
        progress=SimpleNamespace(event=lambda *_a: None),
    )
    recover(search, lost)  # type: ignore[arg-type]
    return ended[0]


# --- docs/roles.md ----------------------------------------------------------------------


def refused_reply(problem: str) -> str:
    from sprout.roles.prompts import render

    return render("retry", problem=problem)


def reviewer_refusal(c: Ctx, branches: list[dict[str, object]]) -> str:
    from sprout.roles.output import OutputError
    from sprout.roles.reviewer import Reviewer

    tree = SimpleNamespace(find_attempt=lambda _id: None)
    reviewer = Reviewer(None, tree)  # type: ignore[arg-type]
    parents = {3: object(), 5: object()}
    reply = json.dumps({"branches": branches})
    with pytest.raises(OutputError) as refused:
        reviewer._read(reply, SimpleNamespace(id="t"), parents, {3: 7, 5: 7}, [], len(branches))  # type: ignore[arg-type]
    return refused_reply(str(refused.value))


BASH = "I run the tests first.\n```bash\npytest -x\n```"


def refused_parent(c: Ctx) -> str:
    plan = {"parent": 9, "boundary": 2, "starting_turn": BASH, "reason": "r"}
    return reviewer_refusal(c, [plan])


def refused_starting_turn(c: Ctx) -> str:
    good = {"parent": 3, "boundary": 2, "starting_turn": BASH, "reason": "r"}
    prose = {"parent": 5, "boundary": 1, "starting_turn": "I would look around.", "reason": "r"}
    return reviewer_refusal(c, [good, prose])


def refused_boundary(c: Ctx) -> str:
    from sprout.roles.analyst import _read
    from sprout.roles.output import OutputError

    reply = json.dumps({"why_failed": "w", "keep": "k", "boundaries": [14]})
    with pytest.raises(OutputError) as refused:
        _read(reply, 3, 7)
    return refused_reply(str(refused.value))


class FakeModel:
    """A model whose replies (or failures) are scripted."""

    name = "fake"

    def __init__(self, *replies: str | Exception) -> None:
        self.replies = list(replies)

    def complete(self, messages: object) -> object:
        from sprout.models.types import Choice, Completion

        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return Completion((Choice(reply),), 10, 10)


def consulted(model: object) -> str:
    """Why the heuristic answered for `model` (the reason it was handed)."""
    from sprout.roles.ask import consult
    from sprout.roles.output import OutputError

    def read(text: str) -> str:
        raise OutputError("branches: the reply plans 0; plan exactly 1")

    recorder = SimpleNamespace(real=lambda _c: None, estimate=lambda *_a: None, on_fallback=None)
    return consult(
        model,  # type: ignore[arg-type]
        lambda: "the prompt",
        read=read,
        heuristic=lambda reason: reason,
        as_reply=lambda _answer: {},
        recorder=recorder,  # type: ignore[arg-type]
        max_retries=2,
    )


def replies_refused(c: Ctx) -> str:
    return consulted(FakeModel("{}", "{}", "{}"))


def request_refused(c: Ctx) -> str:
    from sprout.models import ModelError

    return consulted(FakeModel("{}", ModelError("bad_request", "HTTP 400: too long")))


def oracle_writes_no_review(c: Ctx) -> Produced:
    from sprout.models.resolve import resolve_model

    model = resolve_model("oracle", steps=["true"])
    return Produced(consulted(model), {"<model>": model.name})


def prompt_over_budget(c: Ctx, role: str, window: int, prompt_tokens: int) -> Produced:
    from sprout.roles.fit import Budget, PromptTooLong, fit

    context = SimpleNamespace(
        tokens=window,
        describe=lambda: (
            f"the model's context of {window} tokens (config.json max_position_embeddings)"
        ),
    )
    budget = Budget(object(), context, window // 2)  # type: ignore[arg-type]
    c.monkeypatch.setattr(Budget, "count", lambda self, prompt: prompt_tokens)
    with pytest.raises(PromptTooLong) as refused:
        fit(lambda detail: "x" * 100, ["brief"], budget, role)  # type: ignore[list-item]
    return Produced(str(refused.value), {"1302": str(prompt_tokens)})


def fell_back(c: Ctx) -> str:
    from sprout.search.run_progress import Progress
    from sprout.search.schedule_roles import ScheduleRoles

    stream = io.StringIO()
    search = SimpleNamespace(
        task=SimpleNamespace(id="fix-calc"),
        method=SimpleNamespace(name="sprout"),
        progress=Progress(stream=stream),
    )
    roles = ScheduleRoles.__new__(ScheduleRoles)  # its fallback line alone: no search runs
    roles.search = search  # type: ignore[assignment]
    roles._tell_fallback("reviewer")("3 replies refused (max_retries=2); last: x")
    return stream.getvalue()


# --- docs/integrations.md, docs/training.md, docs/viewer.md, docs/cluster.md ------------


def mini_key_typo(c: Ctx) -> str:
    pytest.importorskip("minisweagent")
    from sprout.integrations.minisweagent.agent_config import check_keys

    return raised(lambda: check_keys("agent.step_limt=3", {"agent": {"step_limt": 3}}))


CONVERTER = """import sys
raise NotImplementedError("BPE pre-tokenizer was not recognized - update get_vocab_base_pre()")
"""


def converter_failed(c: Ctx) -> str:
    from sprout.pipeline.rollout_server import LlamaCppRollouts

    binary = c.tmp / "tools" / "llama-server"
    (binary.parent / "convert").mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    (binary.parent / "convert" / "convert_hf_to_gguf.py").write_text(CONVERTER)
    c.monkeypatch.setenv("SPROUT_LLAMA_SERVER", str(binary))
    c.monkeypatch.chdir(c.tmp)
    with pytest.raises(SproutError) as refused:
        LlamaCppRollouts(c.tmp / "served").serve(Path("models/tiny"), 1)
    argv = ["train", "--model", "hf/models/tiny", "--tasks", "tasks", "--out", "runs/train"]
    return as_the_command_says(c, argv, refused.value)


def group_report(c: Ctx) -> str:
    from sprout.train.samples import GroupReport

    return GroupReport(1, 0, 8, 1824, 5310).describe()


LEARNER_JSON = (
    '{"loss": -0.11844661086797714, "clip_fraction": 0.0, "approx_kl": 0.0, '
    '"mean_advantage": 0.11844660934892673, "grad_norm": 0.6854845285415649, '
    '"zero_variance_groups": 0.0, "groups": 1, "samples": 5, "tokens_trained": 103, '
    '"tokens_in_batch": 167, "tokens_forwarded": 119, "tokens_padded": 155, "micro_batches": 1, '
    '"old_logprobs": "recomputed", "rollout_logprob_gap": null, "lr": 0.001, '
    '"step_seconds": 0.03727535899997747}'
)
"""The JSON line docs/training.md shows `sprout train step` printing (its own QUOTES entry)."""


def learner_json(c: Ctx) -> str:
    """The step's figures as JSON: the doc's line holds every field of today's StepStats."""
    from sprout.train.learnerconfig import StepStats

    return json.dumps(StepStats(**json.loads(LEARNER_JSON)).as_dict())


def learner_line(c: Ctx) -> str:
    from sprout.train.learnerconfig import StepStats

    return StepStats(**json.loads(LEARNER_JSON)).line()


def cut_mark(c: Ctx) -> Produced:
    """The viewer's mark at the end of a cut output, as its JavaScript builds it (read from
    its source: the page runs in a browser, which this test does not start)."""
    script = (REPO / "src/sprout/viewer/static/viewer.js").read_text(encoding="utf-8")
    found = re.search(r"""(… )' \+ fmt\(n\) \+ "( more characters cut here …)""", script)
    assert found is not None, "viewer.js no longer builds the mark this way"
    return Produced(f"{found[1]}1,234{found[2]}", {"N": "1,234"})


def not_a_run_folder(c: Ctx) -> str:
    c.monkeypatch.chdir(c.tmp)
    return command(["view", "DIR"])


def cluster_room(c: Ctx) -> str:
    from sprout.cluster.reservation import Reservation, cluster_room

    node = {"CPU": 1.0, "memory": float(4 << 30)}
    return cluster_room(Reservation(1, 4 << 30, "--ray-memory"), [node] * 3).basis


def at_once(c: Ctx) -> str:
    from sprout.search.summary import table

    basis = cluster_room(c)
    content = {"methods": {}, "tasks": {}, "concurrency": {"workers": 3, "peak": 3, "basis": basis}}
    return table(content)


QUOTES: list[Quote] = [
    # docs/tasks.md
    Quote(
        "docs/tasks.md",
        'fix-calc: …/task.toml: sprout.network: expected true, false, "public", "none" '
        "or \"allowlist\", got 'maybe'",
        bad_network,
    ),
    Quote(
        "docs/tasks.md",
        "task.toml: environment.memory_mb: Input should be greater than 0",
        bad_memory,
    ),
    Quote(
        "docs/tasks.md",
        "task.toml: verifier.env.JUDGE_API_KEY: takes this machine's $OPENAI_API_KEY (the "
        "verifier sees it)",
        judge_key_taken,
    ),
    Quote(
        "docs/tasks.md",
        "verifier.env.JUDGE_API_KEY: ${OPENAI_API_KEY} is not set on this machine ...",
        judge_key_unset,
    ),
    Quote(
        "docs/tasks.md",
        "image alexgshaw/regex-log:20251031: pulled from docker.io (sha256:…)",
        image_pulled,
    ),
    Quote("docs/tasks.md", "… is not a readable tar (…)", unreadable_layer),
    Quote(
        "docs/tasks.md",
        "…: pulled sha256:… (7 layers, 812.4 MB fetched, 2 already in the blob cache, 41.0 s)",
        pull_finished,
    ),
    Quote(
        "docs/tasks.md",
        "image node:20: no registry answered (docker.io: …); sprout builds no approximation "
        "of it (--images approximate knows …)",
        no_registry,
    ),
    Quote(
        "docs/tasks.md",
        "… served bytes that are not the image's (Digest did not match …)",
        corrupt_blob,
    ),
    Quote("docs/tasks.md", "nothing half-pulled was kept", full_disk),
    Quote(
        "docs/tasks.md",
        "python:3.12-slim is approximated by Debian trixie with its Python 3.13, not 3.12 "
        "(Debian has none)",
        approximated,
    ),
    Quote(
        "docs/tasks.md",
        "keeps image debian-...: layer stores of runs stand on it: /runs/a/layers",
        gc_keeps_image,
    ),
    Quote(
        "docs/tasks.md",
        "keeps shipped task folder 3f9c.../fix-git: in use by process 4242 (...)",
        gc_keeps_a_copy_in_use,
    ),
    Quote("docs/tasks.md", ": used 2.0 days ago", gc_keeps_a_copy_used_lately),
    Quote(
        "docs/tasks.md",
        "Dockerfile:9: unsupported Dockerfile instruction FOOBAR",
        unsupported_instruction,
    ),
    Quote(
        "docs/tasks.md",
        "task: environment/Dockerfile:7: USER ghost: user 'ghost' is not in the image's "
        "/etc/passwd",
        user_line,
        sandbox=True,
    ),
    Quote(
        "docs/tasks.md",
        "task: task.toml: verifier.user: user 'ghost' is not in the image's /etc/passwd",
        user_field,
        sandbox=True,
    ),
    Quote(
        "docs/tasks.md",
        "5 of 8 tests passed; failed: test_invoicer_hidden::test_prices_are_read_exactly "
        "(AssertionError: ...)",
        lambda c: summary(5, 3, "test_invoicer_hidden::test_prices_are_read_exactly"),
    ),
    Quote("docs/tasks.md", "2 of 3 tests passed; failed: …", lambda c: summary(2, 1, "t::test_a")),
    Quote(
        "docs/overview.md",
        "45 of 46 tests passed; failed: ...",
        lambda c: summary(45, 1, "t::test_a"),
    ),
    Quote(
        "docs/tasks.md",
        "cannot fetch uv 0.9.5 for the verifier from the package index ...",
        uv_unfetchable,
    ),
    Quote(
        "docs/tasks.md",
        "needs the internet (github.com): uv downloads Python 3.12.12, which the image lacks: ...",
        offline_python,
    ),
    Quote("docs/tasks.md", "instruction.md: not UTF-8 (line 2, column 6: byte 0xff)", not_utf8),
    Quote("docs/tasks.md", "task.toml: a folder, not a file", folder_for_a_file),
    Quote(
        "docs/tasks.md",
        "set-up step 2 at environment/Dockerfile:4 ('COPY data /data'): data/pipe is a named pipe",
        pipe_at_set_up,
        sandbox=True,
    ),
    Quote(
        "docs/tasks.md",
        "astropy__astropy-12907: /data/dev.jsonl:3: FAIL_TO_PASS: …",
        swebench_field,
    ),
    Quote(
        "docs/tasks.md",
        "instance_acme__calc-1: /data/pro.jsonl:3: parser.py: "
        "/data/run_scripts/instance_acme__calc-1/parser.py is missing",
        swebench_pro_script,
    ),
    Quote(
        "docs/tasks.md",
        "acme__calc-7: /data/v2.jsonl:3: install_config.log_parser: 'x': no parser of that "
        "name, neither sprout's own nor the swebench package's (docs/tasks.md lists them)",
        rebench_parser,
    ),
    Quote(
        "docs/tasks.md",
        '/tasks/typo/task.toml: sprout.network: expected true, false, "public", "none" or '
        "\"allowlist\", got 'nope'",
        check_row_typo,
    ),
    Quote(
        "docs/tasks.md",
        "untouched environment already passes (2 of 2 tests passed)",
        check_row_fixed,
        sandbox=True,
    ),
    Quote(
        "docs/tasks.md", "oracle fails add: add(2, 3) != 5", check_row_oracle_fails, sandbox=True
    ),
    Quote("docs/tasks.md", "4 tasks: 1 ok, 3 broken", check_footer),
    Quote("docs/tasks.md", "3 tasks: 2 ok, 1 broken (2 from check.jsonl)", check_footer_from_file),
    # docs/sandbox.md
    Quote("docs/sandbox.md", "sprout image pull NAME", image_not_in_cache),
    Quote("docs/sandbox.md", "sprout image build NAME", image_not_in_cache),
    Quote(
        "docs/sandbox.md",
        "SPROUT_STORE_SIZE: expected a size such as 64G or 512M, got 'banana'",
        bad_store_size,
    ),
    # docs/run.md
    Quote("docs/run.md", "sprout: http://...: HTTP 503: ...; retry 1 of 2 in 0.5 s", retry_told),
    Quote("docs/run.md", "stopped early: ...; fix the server, then --resume", stopped_early),
    Quote(
        "docs/run.md",
        "sprout: swept 1 unsealed layer and work folders (0.2 MB) that killed processes left "
        "in ...",
        swept,
    ),
    Quote("docs/run.md", "in use by sprout process 4242 (sprout run ...)", in_use_by_a_run),
    Quote(
        "docs/run.md",
        "in use by sprout process 4242 (sprout view runs/qwen ...)",
        lambda c: in_use_by_a_viewer(c, "runs/qwen"),
    ),
    Quote("docs/run.md", "nothing to resume", nothing_to_resume),
    Quote(
        "docs/run.md",
        "...lost with its node; could not be rebuilt: turn 3: `pytest` exited 0, recorded as "
        "exited 1",
        not_rebuilt,
    ),
    # docs/roles.md
    Quote(
        "docs/roles.md",
        "Your reply was refused: branches[0].parent: attempt 9 does not exist; choose one of 3, 5",
        refused_parent,
    ),
    Quote(
        "docs/roles.md",
        "Your reply was refused: boundary 14 out of range for attempt 3 (0..7)",
        refused_boundary,
    ),
    Quote(
        "docs/roles.md",
        "Your reply was refused: branches[1].starting_turn: the reply runs no command; write it "
        "as the agent would: ...",
        refused_starting_turn,
    ),
    Quote("docs/roles.md", "3 replies refused (max_retries=2); last: ...", replies_refused),
    Quote("docs/roles.md", "request refused on try 2: ...", request_refused),
    Quote(
        "docs/roles.md",
        "the reviewer's prompt has ... tokens at its briefest, over its budget of ...",
        lambda c: prompt_over_budget(c, "reviewer", 600, 1302),
    ),
    Quote("docs/roles.md", "sprout reviewer fell back to the heuristic: ...", fell_back),
    Quote(
        "docs/roles.md",
        "<model> replays a reference solution and writes no analyses or reviews",
        oracle_writes_no_review,
    ),
    Quote(
        "docs/roles.md",
        "the analyst's prompt has 1302 tokens at its briefest, over its budget of 300 tokens "
        "(the model's context of 600 tokens (config.json max_position_embeddings) less 300 for "
        "the reply)",
        lambda c: prompt_over_budget(c, "analyst", 600, 1302),
    ),
    # docs/integrations.md
    Quote(
        "docs/integrations.md",
        "agent.step_limt=3: agent.step_limt: not a key mini-swe-agent 2.4.6 reads in agent "
        "(a typo?)",
        mini_key_typo,
    ),
    # docs/training.md
    Quote(
        "docs/training.md",
        "sprout train: --rollout-server llamacpp: models/tiny: llama.cpp's converter failed: "
        "NotImplementedError: BPE pre-tokenizer was not recognized - update get_vocab_base_pre()",
        converter_failed,
    ),
    Quote(
        "docs/training.md",
        "1 groups (0 with zero variance, 0%), 8 samples, 1,824 of 5,310 tokens trained",
        group_report,
    ),
    Quote("docs/training.md", LEARNER_JSON, learner_json),
    Quote(
        "docs/training.md",
        "loss -0.1184  clip 0.000  kl 0  adv +0.118  grad 0.685  zero-var groups 0% of 1  "
        "tokens trained 103/167 (forwarded 119)  1 micro-batch  old log-probs recomputed  0.04 s",
        learner_line,
    ),
    # docs/viewer.md
    Quote("docs/viewer.md", "… N more characters cut here …", cut_mark),
    Quote(
        "docs/viewer.md",
        "sprout view: DIR: not a run folder (needs sprout.db and layers/)",
        not_a_run_folder,
    ),
    Quote(
        "docs/viewer.md",
        "in use by sprout process 4242 (sprout view runs/demo ...)",
        lambda c: in_use_by_a_viewer(c, "runs/demo"),
    ),
    # docs/cluster.md
    Quote(
        "docs/cluster.md",
        "the cluster's room: 3 tasks of 1 core and 4.00 GiB on 3 nodes",
        cluster_room,
    ),
    Quote(
        "docs/cluster.md",
        "at once: 3 sandboxes at the most, of 3 allowed (the cluster's room: 3 tasks of 1 core "
        "and 4.00 GiB on 3 nodes)",
        at_once,
    ),
]
"""Every message of sprout's the docs quote, and how to produce it today."""


def _doc_text(doc: str) -> str:
    return folded((REPO / doc).read_text(encoding="utf-8"))


def _param(quote: Quote) -> object:
    marks = [pytest.mark.sandbox] if quote.sandbox else []
    return pytest.param(quote, marks=marks, id=f"{quote.doc}: {quote.text[:60]}")


@pytest.mark.parametrize("quote", [_param(q) for q in QUOTES])
def test_the_quote_is_in_its_doc(quote: Quote):
    quoted = folded(quote.text) in _doc_text(quote.doc)
    assert quoted, f"{quote.doc} no longer quotes: {quote.text}"


@pytest.mark.parametrize("quote", [_param(q) for q in QUOTES])
def test_sprout_prints_the_quote_today(
    quote: Quote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    produced = quote.produce(Ctx(tmp_path, monkeypatch))
    if isinstance(produced, str):
        produced = Produced(produced)
    expected = quote.text
    for example, value in produced.stands_for.items():
        expected = expected.replace(example, value)
    assert holds(produced.text, expected), (
        f"{quote.doc} quotes:\n  {quote.text}\nsprout prints:\n  {produced.text}"
    )


NOT_MESSAGES = {
    # the shapes of lines, not lines
    "FILE: actor.FIELD: problem": "a shape: what a bad field of the actor's table is reported as",
    "INPUT: PROBLEM": "a shape: every error's lead",
    "FILE: TABLE.FIELD: PROBLEM": "a shape: how config.py reports a bad field",
    # the syntax of other files and tools
    'rayStartParams: {num-cpus: "0"}': "KubeRay's YAML",
    "securityContext: {privileged: true}": "Kubernetes' YAML",
    "step_limit: 0": "mini-swe-agent's YAML",
    "ray: true": "a key of the verl agent-loop config (examples/verl/agent_loop.yaml)",
    "parser_name: pytest": "Terminal-Bench 1's task.yaml",
    '"source": "heuristic"': "a field of results.json",
    '"estimated": true': "a field of results.json",
    '{"analyst": {"model": 3, "heuristic": 1}, ...}': "a field of results.json",
    '{"reward": 1}': "the content of a reward file",
    '{"tests": [{"name": ..., "status": ...}]}': "the output.json of SWE-bench Pro's parsers",
    '{"model_path": FOLDER}': "a JSON body sent to a server",
    '{"running": [{"task_id", "method"}...], "schedules": n}': "a JSON answer of the viewer",
    '{"error": message, "status": code}': "the shape of the viewer's JSON errors",
    "# wrong: COMMAND": "a line of solve.sh",
    "# trap: COMMAND": "a line of solve.sh",
    "# trap names: A, B": "a line of solve.sh",
    # what other programs print
    "/proc/self/fd/3: line 2: foo: command not found": "bash's message",
    "uvx: command not found": "the shell's message in a verifier's log",
    "Could not resolve host: astral.sh": "curl's message in a verifier's log",
    "src/x.py:12: in f": "pytest's traceback line",
    "src/x.py:12: AssertionError": "pytest's traceback line",
    "train must not reach: sprout.train.export -> sprout.runfolder -> sprout.sandbox": (
        "tests/test_layers.py's failure, not sprout's"
    ),
}
"""Backticked spans of the docs shaped like a message that are not sprout's messages."""


def code_spans(text: str) -> list[str]:
    """The inline code spans of markdown `text`, fenced blocks left out: each opens with a
    run of backticks and closes at the next run as long (so ``` ```bash ``` is one)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    runs, spans, at = list(re.finditer(r"`+", text)), [], 0
    while at < len(runs):
        opening = runs[at]
        closing = next(
            (n for n in range(at + 1, len(runs)) if runs[n].group() == opening.group()), None
        )
        if closing is None:
            at += 1
            continue
        spans.append(text[opening.end() : runs[closing].start()])
        at = closing + 1
    return spans


def _message_shaped_spans() -> set[tuple[str, str]]:
    """(doc, span) for every inline code span of the docs that holds ": "."""
    found = set()
    for path in [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]:
        for span in code_spans(path.read_text(encoding="utf-8")):
            if ": " in span:
                found.add((str(path.relative_to(REPO)), folded(span)))
    return found


def test_every_message_shaped_span_is_listed():
    listed = [(q.doc, folded(q.text)) for q in QUOTES]
    unlisted = sorted(
        (doc, span)
        for doc, span in _message_shaped_spans()
        if span not in NOT_MESSAGES
        and not any(doc == d and (span in text or text in span) for d, text in listed)
    )
    assert unlisted == [], "quote these in QUOTES (or say in NOT_MESSAGES what they are)"
