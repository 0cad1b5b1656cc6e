"""`sprout tasks check --results FILE`: every finished check as one line of JSON, on disk
as soon as it is known, so that a check of a dataset of thousands of rows, stopped or
killed, goes on where it stopped instead of starting over.

A line holds what the table prints of the task (the verdicts as their cells, the problem,
the seconds, the warnings and the detail under the table), so that a later check prints
the row again without checking the task. The last line of a task wins. A check killed
while writing leaves its last line cut short (no newline, or no JSON): that line is
dropped and its task checked again; any other line that is not a record is bad input, and
the file is left as it is for its owner to look at.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

from pydantic import TypeAdapter, ValidationError

from sprout.durable import HeldLock, append_durably, try_lock
from sprout.errors import SproutError


@dataclass(frozen=True)
class CheckRecord:
    """One task's row of the table, as printed: what a later check prints again."""

    task_id: str
    problem: str | None
    """None when the task is sound."""
    untouched: str
    """The verifier's verdict on the untouched task, as its cell ("fail (1 of 2 tests)")."""
    oracle: str
    """The verdict after the reference solution, as its cell."""
    seconds: float
    warnings: tuple[str, ...] = ()
    detail: str = ""
    """The last lines of what failed, shown under the table."""
    loaded: bool = True
    """False for a task that did not load: checked again by a later check, since its file
    or row may have been fixed since."""

    @property
    def ok(self) -> bool:
        return self.problem is None

    def line(self) -> str:
        """The record as a line of the file; `ok` is there for people and `jq`, and read
        back from `problem`."""
        fields = {"task_id": self.task_id, "ok": self.ok, **asdict(self)}
        return json.dumps(fields, ensure_ascii=False) + "\n"


_RECORD = TypeAdapter(CheckRecord)


class BadResultsFile(SproutError):
    """A --results file that is not the JSON Lines an earlier check wrote."""


class ResultsFile:
    """A --results file: the checks it records, and new ones appended as they finish. Held
    with an flock while open, so that two checks never interleave their lines (a killed
    check lets go of it)."""

    def __init__(self, path: str, last: dict[str, CheckRecord], lock: HeldLock) -> None:
        self.path = path
        self._last = last
        """Each task's last line, by id."""
        self._lock = lock

    def close(self) -> None:
        """Let go of the file: another check may write it now."""
        self._lock.release()

    @classmethod
    def open(cls, path: str) -> ResultsFile:
        """The file at `path`, made if missing, its line cut short by a kill dropped;
        BadResultsFile naming the file (and line) when it holds anything else, or cannot be
        read or written."""
        if os.path.isdir(path):
            raise BadResultsFile(f"--results {path}: a folder, not a file")
        try:
            lock = try_lock(path)
        except OSError as error:
            raise BadResultsFile(f"--results {path}: cannot be written: {error.strerror}") from None
        if lock is None:
            raise BadResultsFile(
                f"--results {path}: another `sprout tasks check` is writing it; let it end first"
            )
        try:
            return cls._read(path, lock)
        except BaseException:
            lock.release()
            raise

    @classmethod
    def _read(cls, path: str, lock: HeldLock) -> ResultsFile:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            data = b""
        except OSError as error:
            raise BadResultsFile(f"--results {path}: cannot be read: {error.strerror}") from None
        records, end = _parse(path, data)
        try:
            if end < len(data):
                os.truncate(path, end)  # so that the next line starts a line of its own
            append_durably(path, "")  # made now: a file that cannot be is told before a check
        except OSError as error:
            raise BadResultsFile(f"--results {path}: cannot be written: {error.strerror}") from None
        return cls(path, {record.task_id: record for record in records}, lock)

    @property
    def earlier(self) -> dict[str, CheckRecord]:
        """The tasks it records as checked, by id; those that did not load are left out, to
        be loaded and checked again."""
        return {task_id: record for task_id, record in self._last.items() if record.loaded}

    def append(self, record: CheckRecord) -> None:
        """`record` as the file's last line, on disk before this returns; none when it is
        the task's last line already (a task that again did not load)."""
        if self._last.get(record.task_id) == record:
            return
        append_durably(self.path, record.line())
        self._last[record.task_id] = record


def _parse(path: str, data: bytes) -> tuple[list[CheckRecord], int]:
    """The records of `data` and where its whole lines end: the last line is dropped when
    a kill cut it short (no newline, or no JSON); any other line must be a record."""
    records = []
    lines = data.splitlines(keepends=True)
    end = 0
    for number, raw in enumerate(lines, start=1):
        last = number == len(lines)
        if last and not raw.endswith(b"\n"):
            break
        try:
            records.append(_RECORD.validate_json(raw, strict=True))
        except ValidationError as error:
            problem = error.errors(include_url=False)[0]
            if problem["type"] == "json_invalid" and last:
                break
            where = ".".join(map(str, problem["loc"]))
            what = f"{where}: {problem['msg']}" if where else problem["msg"]
            raise BadResultsFile(
                f"--results {path}:{number}: not a line of an earlier `sprout tasks check "
                f"--results` ({what})",
                input_name=path,
            ) from None
        end += len(raw)
    return records, end
