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

import re
import time
import urllib.parse
from dataclasses import dataclass, replace

from sprout.agent import Actor, ActorConfig
from sprout.models import ModelError
from sprout.models.oracle import Step
from sprout.models.resolve import resolve_model
from sprout.runfolder import RunFolder
from sprout.sandbox import SandboxError, SandboxUnavailable
from sprout.task import SetupFailed, Task, TaskError
from sprout.tasks import base_checkpoint, solution_checkpoint
from sprout.tasks.discover import grouped_warnings
from sprout.tree import Attempt
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


def verifier_crash(diagnostics: Diagnostics) -> str | None:
    """Why the verifier did not report, or None when it did: per-test results or a reward
    file are a report; a verifier left to its exit code whose log shows a missing command or
    no network crashed, and the reason names the command or the host. A reward file of 0
    with no per-test results and a log that shows no network is a crash too: Terminal-Bench
    2's scripts write 0 whenever their runner fails, even when it never ran a test."""
    if diagnostics.source == "verifier-error":
        return diagnostics.summary
    if diagnostics.passed + diagnostics.failed + diagnostics.errored:
        return None
    reported = "reward" in diagnostics.source
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
    return CheckResult(task_id=task_id.strip(), problem=one_line(rest or line))


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
        base = base_checkpoint(task, run.layers)
        untouched = run_verifier(task, run.layers, base, base).diagnostics
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
        found = _check_oracle(task, run, base, found)
    except SandboxUnavailable:
        raise
    except (TaskError, ResultsError, SandboxError, ModelError) as error:
        # Errors name their task; the table already does.
        found = replace(
            found,
            problem=one_line(str(error).removeprefix(f"{task.id}: ")),
            detail=error.detail if isinstance(error, SetupFailed) else found.detail,
        )
    if found.untouched is not None and found.untouched_ran and found.untouched.reward != 0:
        # The more basic fault goes first: hidden tests that catch nothing.
        passes = f"untouched environment already passes ({found.untouched.summary})"
        problem = "; ".join(p for p in (passes, found.problem) if p)
        found = replace(found, problem=one_line(problem))
    return replace(found, seconds=time.monotonic() - started)


def _check_oracle(task: Task, run: RunFolder, base: str, found: CheckResult) -> CheckResult:
    """`found` with the oracle's attempt, the verdict on it and what went wrong, if anything."""
    started = time.monotonic()
    attempt = _play_oracle(task, run, base)
    verdict = run_verifier(task, run.layers, run.tree.checkpoint(attempt), base)
    run.store.set_outcome(attempt.id, verdict.reward, verdict.diagnostics.to_json(), verdict.patch)
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
    elif oracle.reward != 1:
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
        warnings=found.warnings + (tuple(failed_steps) if oracle.reward == 1 else ()),
    )


def _play_oracle(task: Task, run: RunFolder, base: str) -> Attempt:
    """The reference solution as a root attempt: one step per turn, then the submit turn."""
    steps = [Step(step.command, step.wrong) for step in task.solution]
    config = ActorConfig(
        max_turns=len(steps) + 1,
        # The whole reference solution has to fit in the agent's time budget.
        call_timeout_s=task.agent_timeout_s or ActorConfig().call_timeout_s,
        max_wall_s=task.agent_timeout_s,
    )
    actor = Actor(resolve_model("oracle", steps=steps), run.tree, run.layers, config)
    run.store.add_task(task.id, task.model_dump(mode="json"))
    prefix = actor.prefix(task.instruction, task.workdir)
    start = solution_checkpoint(task, run.layers, base)
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
    """`text` on one line, cut to `cap` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= cap else flat[: cap - 3] + "..."


def outcome(diagnostics: Diagnostics | None, expected: float) -> str:
    """A verdict cell: lower case when it is what a sound task gives, upper case otherwise."""
    if diagnostics is None:
        return "-"
    passed = diagnostics.reward == 1
    word = "pass" if passed else "fail"
    if passed != (expected == 1):
        word = word.upper()
    ran = diagnostics.passed + diagnostics.failed + diagnostics.errored
    return f"{word} ({diagnostics.passed} of {ran} tests)" if ran else word


_VERDICT_WIDTH = 22


def table_header(width: int) -> str:
    """The table's first line; `width` is that of the longest task id."""
    cells = ("task".ljust(width), "untouched".ljust(_VERDICT_WIDTH), "oracle".ljust(_VERDICT_WIDTH))
    return "  ".join((*cells, "seconds", "problem"))


def table_row(result: CheckResult, width: int) -> str:
    """One task's line: both verdicts, the time it took, and its problem or "ok"."""
    untouched = outcome(result.untouched, expected=0) if result.untouched_ran else "NO REPORT"
    cells = (
        result.task_id.ljust(width),
        untouched.ljust(_VERDICT_WIDTH),
        outcome(result.oracle, expected=1).ljust(_VERDICT_WIDTH),
        f"{result.seconds:7.1f}",
    )
    return "  ".join((*cells, result.problem or "ok"))


def summary_line(results: list[CheckResult]) -> str:
    """ "8 tasks: 7 ok, 1 broken"."""
    broken = sum(not result.ok for result in results)
    noun = "task" if len(results) == 1 else "tasks"
    return f"{len(results)} {noun}: {len(results) - broken} ok, {broken} broken"


def warning_lines(results: list[CheckResult]) -> list[str]:
    """Each distinct warning once, with the tasks it concerns (see `grouped_warnings`)."""
    return grouped_warnings((result.task_id, result.warnings) for result in results)


def detail_lines(results: list[CheckResult]) -> list[str]:
    """Under the table: for each broken task, the last lines of what failed."""
    lines = []
    for result in results:
        if not result.ok and result.detail:
            lines.append(f"--- {result.task_id}: {result.problem}")
            lines += ["    " + line for line in result.detail.splitlines()]
    return lines
