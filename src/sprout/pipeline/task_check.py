"""`sprout tasks check`: do a task's environment, reference solution and verifier agree?

A task is only worth searching on when its hidden tests fail on the untouched
environment (so they catch the bug) and pass once the reference solution has
been played (so the task can be solved). Both are checked the way a run would
see them: the base layer is built as `sprout run` builds it, and the reference
solution is played by the `oracle` model through the real actor, one step per
turn, so a step that only works in a long-lived shell shows up here and not in
the middle of a search. A broken task is reported, never raised: one bad task
must not hide the verdicts on the others.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import tempfile
import time
import traceback
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from sprout.agent import Actor, ActorConfig
from sprout.models import ModelError
from sprout.models.oracle import Step
from sprout.models.resolve import resolve_model
from sprout.runfolder import RunFolder
from sprout.sandbox import (
    SandboxError,
    SandboxUnavailable,
    SandboxWorkspace,
    process_alive,
    process_start,
    remove_store_with_link,
    remove_tree,
)
from sprout.task import SetupFailed, Task, TaskError
from sprout.tasks import base_checkpoint_of, solution_checkpoint
from sprout.tree import Attempt, passes
from sprout.verify import Diagnostics, ResultsError, run_verifier

PROBLEM_CAP = 240
"""A problem is one line of the table; the run folder holds the rest."""
DETAIL_LINES = 20
"""Lines of a failing command's output shown under the table."""

_NOT_FOUND = re.compile(r"(?:^|: )(?P<what>[\w./+-]+): (?:command )?not found\s*$", re.M)
_OFFLINE = re.compile(
    r"Could not resolve host:? (?P<host>[\w.-]+)|Temporary failure in name resolution|"
    r"Name or service not known|Network is unreachable|Failed to establish a new connection|"
    r"dns error|client error \(Connect\)|tcp connect error"
)
_UV_REQUEST = re.compile(
    r"(?:Failed to (?:download|fetch):?|error sending request for url) *[`(]?"
    r"(?P<url>https?://[^\s`)]+)"
)
"""uv names what it could not reach above its reason ("dns error"), on lines of their own."""


@dataclass(frozen=True)
class CheckResult:
    """What checking one task found; `problem` is None when the task is sound."""

    task_id: str
    untouched: Diagnostics | None = None
    """The verifier on checkpoint 0: a sound task fails here."""
    oracle: Diagnostics | None = None
    """The verifier after the oracle's attempt: a sound task passes here."""
    attempt_id: int | None = None
    """The oracle's attempt in the run folder, for `sprout shell RUN ATTEMPT:k`."""
    seconds: float = 0.0
    oracle_seconds: float | None = None
    """The oracle's attempt alone (its turns and the verifier after them)."""
    problem: str | None = None
    warnings: tuple[str, ...] = ()
    untouched_ran: bool = True
    """False when the verifier on checkpoint 0 crashed instead of reporting: "fails untouched"
    would then say nothing about the tests."""
    detail: str = ""
    """The last lines of what failed (a verifier's log, a step's output), for people."""

    @property
    def ok(self) -> bool:
        return self.problem is None


Report = Callable[[CheckResult], None]
"""Told each check's result as it is known (on the thread that waits for the checks)."""


def verifier_crash(diagnostics: Diagnostics) -> str | None:
    """Why the verifier did not report, or None when it did: per-test results or a reward
    file are a report; a verifier left to its exit code whose log shows a missing command or
    no network crashed, and the reason names the command or the host. A reward file of 0
    with no per-test results and a log that shows no network is a crash too: Terminal-Bench
    2's scripts write 0 whenever their runner fails, even when it never ran a test."""
    decided_by = diagnostics.provenance.kind
    if diagnostics.passed + diagnostics.failed + diagnostics.errored:
        return None
    reported = decided_by == "reward"
    if reported and diagnostics.reward != 0:
        return None
    log = diagnostics.log_tail
    offline = _offline(log)
    if offline is not None:
        return offline
    missing = _NOT_FOUND.search(log)
    if missing and not reported:
        return f"a command it runs is missing: {missing.group('what')}: not found"
    return None


def _offline(log: str) -> str | None:
    """ "needs the internet (HOST): LINE" when `log` shows a request that found no network;
    uv's own request wins over an earlier one (the installer's curl is harmless once sprout
    has put uv in place)."""
    offline = _OFFLINE.search(log)
    if offline is None:
        return None
    request = _UV_REQUEST.search(log)
    if request is not None:
        url = request.group("url")
        host = urllib.parse.urlsplit(url).hostname or ""
        line = next(ln for ln in log.splitlines() if request.group(0) in ln)
        line = re.sub(r"^\W*(?:Caused by:|error:)?\s*", "", line)  # uv's tree-drawing prefix
        python = re.search(r"/cpython-(\d+\.\d+(?:\.\d+)?)", url)
        if python is not None:  # uv wanted a Python the image lacks (`uvx -p 3.12`)
            line = f"uv downloads Python {python.group(1)}, which the image lacks: {line}"
    else:
        host = offline.group("host") or ""
        line = next((ln for ln in log.splitlines() if offline.group(0) in ln), "").strip()
    return f"needs the internet{f' ({host})' if host else ''}: {line[:160]}"


def last_lines(text: str, count: int = DETAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-count:])


def load_failure(line: str) -> CheckResult:
    """A task that did not load, as a broken result: loader lines start with the task's id."""
    task_id, _, rest = line.partition(": ")
    return CheckResult(task_id=one_line(task_id), problem=one_line(rest or line))


def check_task(task: Task, run: RunFolder) -> CheckResult:
    """Check that `task` fails untouched and passes after the oracle plays its solution.

    The oracle's attempt and its outcome are recorded in `run`, so a kept run
    folder can be opened with `sprout shell` at any of its turns. Broken set-up,
    a verifier whose results cannot be read, or a missing solution become the
    result's `problem`; only a machine that cannot run sandboxes at all raises.
    """
    started = time.monotonic()
    found = CheckResult(task.id, warnings=task.warnings)
    try:
        untouched_checkpoint = base_checkpoint_of(task, run.layers)
        untouched = run_verifier(
            task, run.layers, untouched_checkpoint, untouched_checkpoint
        ).diagnostics
        found = replace(found, untouched=untouched)
        crash = verifier_crash(untouched)
        if crash is not None:
            problem = f"the verifier did not run on the untouched task: {crash}"
            return replace(
                found,
                untouched_ran=False,
                problem=one_line(problem),
                detail=last_lines(untouched.log_tail),
                seconds=time.monotonic() - started,
            )
        if not task.solution:
            problem = "no reference solution (no steps for the oracle to play)"
            return replace(found, problem=problem, seconds=time.monotonic() - started)
        found = _check_oracle(task, run, untouched_checkpoint, found)
    except SandboxUnavailable:
        raise
    except (TaskError, ResultsError, SandboxError, ModelError) as error:
        # Errors name their task; the table already does.
        problem = str(error).removeprefix(f"{task.id}: ")
        printed = error.detail.partition("\n")[2] if isinstance(error, SetupFailed) else ""
        offline = _offline(printed)  # the step's output, not its command line
        found = replace(
            found,
            problem=one_line(f"{offline}; {problem}" if offline else problem),
            detail=error.detail if isinstance(error, SetupFailed) else found.detail,
        )
    except Exception as error:  # a fault no one foresaw is still this task's line
        found = replace(
            found,
            problem=one_line(f"sprout failed on this task: {type(error).__name__}: {error}"),
            detail=last_lines(traceback.format_exc()),
        )
    if found.untouched is not None and found.untouched_ran and found.untouched.reward != 0:
        # The more basic fault goes first: hidden tests that catch nothing.
        passes = f"untouched environment already passes ({found.untouched.summary})"
        problem = "; ".join(p for p in (passes, found.problem) if p)
        found = replace(found, problem=one_line(problem))
    return replace(found, seconds=time.monotonic() - started)


def _check_oracle(
    task: Task, run: RunFolder, base_checkpoint: str, found: CheckResult
) -> CheckResult:
    """`found` with the oracle's attempt, the verdict on it and what went wrong, if anything."""
    started = time.monotonic()
    attempt = _play_oracle(task, run, base_checkpoint)
    verdict = run_verifier(task, run.layers, run.tree.checkpoint(attempt), base_checkpoint)
    run.tree.set_outcome(attempt.id, verdict.reward, verdict.diagnostics.to_json(), verdict.patch)
    failed_steps = _failed_steps(run, attempt, len(task.solution))
    oracle = verdict.diagnostics
    problem = None
    detail = ""
    crash = verifier_crash(oracle)
    if attempt.status != "submitted":
        problem = f"oracle attempt ended ({attempt.status}): {attempt.end_reason}"
    elif crash is not None:
        problem = f"the verifier did not run after the oracle: {crash}"
        detail = last_lines(oracle.log_tail)
    elif not passes(oracle.reward):
        problem = "; ".join([*failed_steps[:1], f"oracle fails {first_failure(oracle)}"])
        detail = _failed_output(run, attempt, len(task.solution)) or last_lines(oracle.log_tail)
    return replace(
        found,
        oracle=oracle,
        attempt_id=attempt.id,
        oracle_seconds=time.monotonic() - started,
        problem=one_line(problem) if problem else None,
        detail=detail,
        # A step that failed while the tests still pass is worth a look, not a verdict.
        warnings=found.warnings + (tuple(failed_steps) if passes(oracle.reward) else ()),
    )


def _play_oracle(task: Task, run: RunFolder, base_checkpoint: str) -> Attempt:
    """The reference solution as a root attempt: one step per turn, then the submit turn."""
    steps = [Step(step.command, step.wrong) for step in task.solution]
    config = ActorConfig(
        max_turns=len(steps) + 1,
        # The whole reference solution has to fit in the agent's time budget.
        call_timeout_s=task.agent_timeout_s or ActorConfig().call_timeout_s,
        max_wall_s=task.agent_timeout_s,
    )
    workspace = SandboxWorkspace(run.layers)
    actor = Actor(resolve_model("oracle", steps=steps), run.tree, workspace, config)
    run.tree.add_task(task.id, task.model_dump(mode="json"))
    prefix = actor.prefix(task.instruction, task.workdir)
    start = solution_checkpoint(task, run.layers, base_checkpoint)
    return actor.run(run.tree.root(task.id, prefix, start, method="oracle"))


def _failed_steps(run: RunFolder, attempt: Attempt, total: int) -> list[str]:
    """One line per reference step that exited non-zero or timed out: often the cause."""
    lines = []
    for turn in run.tree.own_turns(attempt)[:total]:
        for call in turn.calls:
            if call.timed_out or call.exit_code != 0:
                end = "timed out" if call.timed_out else f"exited {call.exit_code}"
                last = next((ln for ln in reversed(call.output.splitlines()) if ln.strip()), "")
                detail = f" ({last.strip()})" if last else ""
                lines.append(f"step {turn.index}/{total} {end}{detail}")
    return lines


def _failed_output(run: RunFolder, attempt: Attempt, total: int) -> str:
    """The command and the last lines of the first reference step that failed, if any."""
    for turn in run.tree.own_turns(attempt)[:total]:
        for call in turn.calls:
            if call.timed_out or call.exit_code != 0:
                command = one_line(call.command, 200)
                return f"$ {command}\n{last_lines(call.output)}"
    return ""


def first_failure(diagnostics: Diagnostics) -> str:
    """The first failing test and the first line of its message, else the summary."""
    for test in diagnostics.tests:
        if test.outcome in ("failed", "error"):
            message = next((ln.strip() for ln in test.message.splitlines() if ln.strip()), "")
            return f"{test.name}: {message}" if message else test.name
    return diagnostics.summary


def one_line(text: str, cap: int = PROBLEM_CAP) -> str:
    """`text` on one line, cut to `cap` characters; what UTF-8 cannot hold (a file name's
    undecodable bytes) as escapes, so that printing it never fails."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    flat = " ".join(text.split())
    return flat if len(flat) <= cap else flat[: cap - 3] + "..."


SCRATCH_PREFIX = "sprout-check-"
"""The temporary run folders of checks without --out, in the temp folder."""
OWNER_FILE = "owner.json"
"""In a temporary run folder: the process that made it, so that a later check removes the
folder only once that process is gone."""


def this_process() -> dict[str, object]:
    """This process, as a later one can tell whether it still runs: pid and start time, in
    which PID namespace, on which machine since which boot."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="utf-8") as handle:
            boot = handle.read().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        boot = namespace = ""
    return {
        "pid": os.getpid(),
        "start": process_start("self"),
        "pid_namespace": namespace,
        "host": socket.gethostname(),
        "boot": boot,
    }


def _owner_gone(folder: Path, me: dict[str, object]) -> bool:
    """True only when the process that made `folder` is certainly gone: on this machine, in
    this PID namespace, no process with its pid and start time (or the machine has booted
    since). Anything unsure (no owner file yet, another machine or namespace) is False."""
    try:
        if folder.stat().st_uid != os.geteuid():
            return False
        owner = json.loads((folder / OWNER_FILE).read_text(encoding="utf-8"))
        pid = int(owner["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if not isinstance(owner, dict) or owner.get("host") != me["host"] or not me["boot"]:
        return False
    if owner.get("boot") != me["boot"]:
        return True  # the machine booted since: no process of before is left
    if owner.get("pid_namespace") != me["pid_namespace"]:
        return False
    running = process_start(pid)
    if running is not None:  # a process with that pid: the owner unless it started later
        return owner.get("start") is not None and running != owner.get("start")
    return not process_alive(pid)  # no /proc/PID/stat to read: is there a process at all?


def remove_abandoned(parent: Path) -> list[Path]:
    """Remove the temporary run folders under `parent` whose checks are gone (killed before
    they could clean up); never one whose process still runs. Returns those removed."""
    me = this_process()
    removed = []
    for folder in sorted(parent.glob(f"{SCRATCH_PREFIX}*")):
        if folder.is_dir() and not folder.is_symlink() and _owner_gone(folder, me):
            _remove_scratch(folder)
            if not folder.exists():
                removed.append(folder)
    return removed


@contextlib.contextmanager
def scratch_run_folder(parent: str | Path | None = None) -> Iterator[Path]:
    """A temporary run folder, `run/` in a new `sprout-check-*` folder of `parent` (the
    temp folder by default) that records its owner, removed however the block ends.
    Leftovers of checks that were killed are removed first. The owner file is written
    whole (a rename) before the block starts, so another check never mistakes a folder
    being made for a leftover."""
    parent = Path(parent or tempfile.gettempdir())
    remove_abandoned(parent)
    folder = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=parent))
    try:
        partial = folder / f"{OWNER_FILE}.partial"
        partial.write_text(json.dumps(this_process()), encoding="utf-8")
        partial.rename(folder / OWNER_FILE)
        yield folder / "run"
    finally:
        _remove_scratch(folder)


REMOVE_WAIT_S = 10.0
"""How long a temporary run folder is tried again (every 0.2 s) before it is left to the
next check: an interrupted run's last threads may still write a file (an attempt commits
the turn it held once its flush is done, later on a loaded machine) while the folder
goes."""


def _remove_scratch(folder: Path) -> None:
    """Remove a temporary run folder, its owner file last: interrupted half-way, what is
    left still says whose it was, for the next check to finish the job."""
    deadline = time.monotonic() + REMOVE_WAIT_S
    while True:
        with contextlib.suppress(OSError):
            remove_store_with_link(folder / "run" / "layers")  # on sprout's store filesystem
            for entry in sorted(folder.iterdir(), key=lambda entry: entry.name == OWNER_FILE):
                if entry.is_dir() and not entry.is_symlink():
                    remove_tree(str(entry))
                else:
                    entry.unlink()
            folder.rmdir()
        if not folder.exists() or time.monotonic() > deadline:
            return
        time.sleep(0.2)
