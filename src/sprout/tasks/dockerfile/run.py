"""A Dockerfile's RUN as `docker build` reads it: shell or exec form, heredocs (a body with
`#!` runs as a file of its own), the stage's SHELL, USER, WORKDIR and ENV, and the flags
that mean something without a build daemon (`--mount` of a cache, a secret; `--network`)."""

from __future__ import annotations

import shlex
from typing import Any

from sprout.task import SetupStep, TaskError
from sprout.tasks.dockerfile.state import (
    DEFAULT_SHELL,
    HEREDOC,
    ReaderState,
    StageState,
    chomp,
    flags,
)


def _script(text: str) -> str:
    """A shell command that runs `text` (which starts with `#!`) as an executable file, as
    BuildKit runs a heredoc with a shebang; the file is gone when it returns."""
    delimiter = "SPROUT_SCRIPT"
    while delimiter in text.splitlines():
        delimiter += "_"
    ending = "" if text.endswith("\n") else "\n"
    return (
        f"script=$(mktemp) && cat > \"$script\" <<'{delimiter}'\n{text}{ending}{delimiter}\n"
        'chmod +x "$script" && "$script"; status=$?; rm -f "$script"; exit $status'
    )


class RunInstructions(ReaderState):
    """RUN: one `run` step with the stage's shell, user, workdir and environment."""

    def run(self, stage: StageState, command: Any, here: str) -> None:
        for name, value in flags(command, ("mount", "network", "security"), here):
            if name == "mount":
                self.mount(value, here)
            else:
                self.warnings.append(
                    f"{here}: RUN --{name}={value} is ignored: set-up steps run with the "
                    "network and the sandbox's own isolation"
                )
        shell = stage.shell
        if command.heredocs:
            text, shell = self.run_heredoc(stage, command)
        elif command.json:
            text, shell = shlex.join(command.value), ()  # exec form: words, no shell
        else:
            text = command.value[0] if command.value else ""
        if not text.strip():
            raise TaskError(f"{here}: RUN needs a command")
        stage.steps.append(
            SetupStep(
                kind="run",
                origin=here,
                command=text,
                shell=shell,
                user=stage.user,
                workdir=stage.workdir or "/",
                env=stage.step_env(),
            )
        )

    def mount(self, value: str, here: str) -> None:
        """`RUN --mount`: a cache or tmpfs is the step's own directory, a secret or SSH agent
        is not given; a bind is an error (COPY it instead)."""
        options = dict(o.partition("=")[::2] for o in value.split(","))
        kind = options.get("type", "bind")
        if kind in ("cache", "tmpfs"):
            self.warnings.append(
                f"{here}: RUN --mount=type={kind} is ignored: the step writes into its "
                "target directory itself, and what it writes stays in the base layer"
            )
        elif kind in ("secret", "ssh"):
            self.warnings.append(
                f"{here}: RUN --mount=type={kind} is ignored: sprout gives set-up no build "
                "secrets or SSH agent"
            )
        else:
            raise TaskError(
                f"{here}: RUN --mount=type={kind} is not supported; COPY what the step "
                "needs in an instruction of its own"
            )

    def run_heredoc(self, stage: StageState, command: Any) -> tuple[str, tuple[str, ...]]:
        """BuildKit's RUN with heredocs: a lone `<<EOF` runs its body (a file of its own when
        it starts with `#!`); otherwise the heredocs go back under the line, for the shell."""
        line = str(command.value[0]) if command.value else ""
        alone = HEREDOC.fullmatch(line.strip())
        if alone and len(command.heredocs) == 1:
            body = str(command.heredocs[0].content)
            body = chomp(body) if alone.group(1) else body
            if body.startswith("#!"):
                return _script(body), DEFAULT_SHELL
            return body, stage.shell
        text = line + "".join(f"\n{h.content}{h.name}" for h in command.heredocs)
        return text, stage.shell
