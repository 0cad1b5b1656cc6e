"""The variables a task.toml's Harbor tables set, resolved as Harbor resolves them when a
trial starts: `[environment] env` (the agent's, so the verifier's too), `[verifier] env`
(the verifier's alone) and `[solution] env` (the reference solution's, so only the oracle
models'). A value may take this machine's variables, `${NAME}` or `${NAME:-default}`
(an API key for a judge, say); each one taken is a warning of the task, since it leaves
this machine for a sandbox, and one that is unset without a default is the task's error,
as Harbor refuses it."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from sprout.task import TaskError

TEMPLATE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}")
"""`${NAME}` or `${NAME:-default}`; a bare `$NAME` is left as written, as Harbor leaves it."""


@dataclass(frozen=True)
class ResolvedEnv:
    """A table's variables with this machine's values in, and what was taken from it."""

    values: dict[str, str]
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class HarborVariables:
    """The three tables' variables of one task, resolved."""

    container: dict[str, str]
    verifier: dict[str, str]
    solution: dict[str, str]
    warnings: tuple[str, ...]

    def task_fields(
        self, env: Mapping[str, str], sprout_env: Mapping[str, str]
    ) -> dict[str, object]:
        """The Task's variables: `env` (the Dockerfile's ENV and `[sprout] env`) under
        `[environment] env`, under `[sprout] env` again, which wins over Harbor's tables."""
        declared = {**self.container, **sprout_env}
        return {
            "env": {**env, **declared},
            "declared_env": declared,
            "verifier_env": self.verifier,
            "solution_env": self.solution,
        }


def harbor_variables(
    where: str,
    container: Mapping[str, str],
    verifier: Mapping[str, str],
    solution: Mapping[str, str],
    environ: Mapping[str, str] | None = None,
) -> HarborVariables:
    """The `env` tables of `[environment]`, `[verifier]` and `[solution]` of the task.toml
    `where` names (`TASK: FILE`), resolved from `environ` (None: this process's variables as
    they are now; read at each call, since a library may put a copy in `os.environ`'s place,
    as Hugging Face datasets' `map` with `num_proc` does)."""
    environ = os.environ if environ is None else environ
    tables = [
        resolve_env(container, f"{where}: environment.env", "the agent", environ),
        resolve_env(verifier, f"{where}: verifier.env", "the verifier", environ),
        resolve_env(solution, f"{where}: solution.env", "the oracle's solution", environ),
    ]
    warnings = tuple(line for table in tables for line in table.warnings)
    return HarborVariables(*(table.values for table in tables), warnings)


def resolve_env(
    table: Mapping[str, str],
    where: str,
    seen_by: str,
    environ: Mapping[str, str] | None = None,
) -> ResolvedEnv:
    """`table` (task.toml's `where`, `TASK: FILE: TABLE.env`) resolved from `environ` (None:
    `os.environ` as it is now); `seen_by` says who gets it, for the warning. TaskError, one
    line, for an unset name."""
    environ = os.environ if environ is None else environ
    values: dict[str, str] = {}
    warnings: list[str] = []
    for key, value in table.items():

        def take(match: re.Match[str], key: str = key) -> str:
            name, has_default, default = match.group(1), match.group(2), match.group(3)
            found = environ.get(name)
            if found is not None:
                warnings.append(f"{where}.{key}: takes this machine's ${name} ({seen_by} sees it)")
                return found
            if has_default is None:
                raise TaskError(
                    f"{where}.{key}: ${{{name}}} is not set on this machine (write "
                    f"${{{name}:-DEFAULT}} to give it a default)"
                )
            return default

        values[key] = TEMPLATE.sub(take, value)
    return ResolvedEnv(values, tuple(dict.fromkeys(warnings)))
