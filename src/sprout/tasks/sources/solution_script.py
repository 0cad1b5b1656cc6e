"""A reference solution's script as the oracle's turns: `# step` lines split it, `# wrong:`
and `# trap:` lines offer the simulation's wrong variants of a step."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sprout.task import SolutionStep

STEP_MARKER = "# step"
WRONG_MARKER = "# wrong:"
TRAP_MARKER = "# trap:"
TRAP_NAMES_MARKER = "# trap names:"


@dataclass
class _StepText:
    lines: list[str]
    wrong: list[str]
    trap: str | None = None
    trap_names: tuple[str, ...] = ()


_HEREDOC = re.compile(r"(?<![<\w])<<(-?)[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_.-]*)\2")
"""`<<EOF`, `<<-'EOF'`, `<< "END"` (not `<<<`, a here-string)."""
SOLUTION_FILE = "/tmp/sprout-solution.sh"
"""Where a solution without markers is written before it runs, when no /solution holds it."""


def _directives(lines: list[str]) -> list[tuple[str, str]]:
    """Each line with what it is: ("step" | "wrong" | "trap" | "names" | "line", text). Markers
    count only outside heredocs, so a `# step 1` in a heredoc's text stays text."""
    found: list[tuple[str, str]] = []
    pending: list[tuple[bool, str]] = []  # heredocs opened on the line before, in order
    for line in lines:
        if pending:
            strip_tabs, delimiter = pending[0]
            body = line.rstrip("\n")
            if (body.lstrip("\t") if strip_tabs else body) == delimiter:
                pending.pop(0)
            found.append(("line", line))
            continue
        stripped = line.strip()
        lowered = stripped.lower()
        if stripped == STEP_MARKER:
            found.append(("step", line))
        elif lowered.startswith(WRONG_MARKER):
            found.append(("wrong", stripped[len(WRONG_MARKER) :].strip()))
        elif lowered.startswith(TRAP_NAMES_MARKER):
            found.append(("names", stripped[len(TRAP_NAMES_MARKER) :]))
        elif lowered.startswith(TRAP_MARKER):
            found.append(("trap", stripped[len(TRAP_MARKER) :].strip()))
        else:
            found.append(("line", line))
            if not stripped.startswith("#"):
                pending += [(m.group(1) == "-", m.group(3)) for m in _HEREDOC.finditer(line)]
    return found


def as_one_script(text: str, path: str | None) -> str:
    """The command that runs `text` as a script file, byte for byte: `bash PATH` when the
    oracle's /solution holds it, else the script written to a file first."""
    if path is not None:
        return f"bash {path}"
    delimiter = "SPROUT_SOLUTION"
    while delimiter in text.splitlines():
        delimiter += "_"
    ending = "" if text.endswith("\n") else "\n"
    return f"cat > {SOLUTION_FILE} <<'{delimiter}'\n{text}{ending}{delimiter}\nbash {SOLUTION_FILE}"


def split_solution(text: str, script_path: str | None = None) -> tuple[SolutionStep, ...]:
    """The reference solution as the oracle's turns.

    A line that is exactly `# step`, outside any heredoc, starts a new turn; inside
    a step, `# wrong: COMMAND` offers a wrong variant of it, and `# trap: COMMAND`
    with `# trap names: A, B` a misconception (a wrong variant that passes every
    visible check) and what the verifier names when it fails (for oracle-noise's
    `trap` errors). Lines before the first marker (`set -e`, `cd /app`) are repeated
    at the head of every step, since each turn runs in a fresh shell. Every other
    line is kept as it is, comments, blank lines and heredocs included.

    Without markers the whole script is one turn that runs it as a file
    (`script_path`, where the oracle's /solution holds it; else written out first).
    """
    directives = _directives(text.splitlines(keepends=True))
    if not any(kind == "step" for kind, _ in directives):
        return (SolutionStep(command=as_one_script(text, script_path)),) if text.strip() else ()
    preamble: list[str] = []
    steps: list[_StepText] = []
    for kind, value in directives:
        if kind == "step":
            steps.append(_StepText([], []))
        elif not steps:
            if kind == "line" and not value.startswith("#!"):
                preamble.append(value)
        elif kind == "wrong":
            steps[-1].wrong.append(value)
        elif kind == "names":
            steps[-1].trap_names = tuple(n.strip() for n in value.split(",") if n.strip())
        elif kind == "trap":
            steps[-1].trap = value
        else:
            steps[-1].lines.append(value)
    head = "".join(preamble).strip("\n")

    def with_head(command: str) -> str:
        return f"{head}\n{command}" if head else command

    result = []
    for step in steps:
        body = "".join(step.lines).strip("\n")
        if not body.strip():
            continue
        result.append(
            SolutionStep(
                command=with_head(body),
                wrong=tuple(with_head(w) for w in step.wrong),
                trap=with_head(step.trap) if step.trap else None,
                trap_names=step.trap_names,
            )
        )
    return tuple(result)
