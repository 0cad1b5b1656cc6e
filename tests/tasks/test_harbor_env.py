"""Harbor's `env` tables of task.toml: `[environment] env` reaches the agent and the
verifier but not the set-up, `[verifier] env` only the verifier, `[solution] env` only the
oracle's solution; `${NAME}` and `${NAME:-default}` take this machine's variables, each
said, and an unset one without a default is one line naming the field."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sprout.cli import main
from sprout.task import TaskError
from sprout.tasks.sources.native import load_native
from tests.support.chat_server import what_a_model_sees
from tests.support.requirements import require_host_image
from tests.support.taskfolders import write_task

TOML = """\
[environment]
env = { AGENT_VAR = "agent ${SPROUT_TEST_NAME:-nobody}", LITERAL = "$HOME", BOTH = "harbor" }

[verifier]
timeout_sec = 30
env = { JUDGE_KEY = "${SPROUT_TEST_KEY}" }

[solution]
env = { SOLVER = "solver", LITERAL = "solver-value" }

[sprout]
image = "host"
network = false
env = { BOTH = "sprout" }
setup = ["env > /workspace/setup-env"]
"""

SOLVE = """#!/bin/bash
env > /workspace/solution-env
echo SPROUT_SUBMIT
"""

TEST_SH = """#!/bin/bash
# TAP: what the verifier, the solution and the set-up each saw
cd /workspace
n=0
check() { n=$((n+1)); if eval "$2"; then echo "ok $n $1"; else echo "not ok $n $1"; fi; }
echo "1..10"
check verifier-has-judge-key '[ "$JUDGE_KEY" = "k-123" ]'
check verifier-has-agent-var '[ "$AGENT_VAR" = "agent ada" ]'
check sprout-env-wins '[ "$BOTH" = "sprout" ]'
check solution-has-its-env 'grep -qx "SOLVER=solver" solution-env'
check solution-has-agent-var 'grep -qx "AGENT_VAR=agent ada" solution-env'
check solution-lacks-judge-key '! grep -q JUDGE_KEY solution-env'
check setup-lacks-runtime-env '! grep -q AGENT_VAR setup-env'
check verifier-lacks-solution-env '[ -z "${SOLVER+set}" ]'
check verifier-has-the-value-the-solution-shadowed '[ "$LITERAL" = "\\$HOME" ]'
check solution-has-its-shadowing-value 'grep -qx "LITERAL=solver-value" solution-env'
"""


def env_task(root: Path) -> Path:
    return write_task(
        root,
        "harbor-env",
        instruction="Write what you see.\n",
        toml=TOML,
        solve=SOLVE,
        tests={"test.sh": TEST_SH},
    )


@pytest.fixture
def machine_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPROUT_TEST_NAME", "ada")
    monkeypatch.setenv("SPROUT_TEST_KEY", "k-123")


def test_each_table_is_read_into_its_phase_and_what_it_takes_from_this_machine_is_said(
    tmp_path: Path, machine_variables: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = load_native(env_task(tmp_path))
    assert task.env["AGENT_VAR"] == "agent ada"
    assert task.env["LITERAL"] == "$HOME", "a bare $NAME is left as written"
    assert task.env["BOTH"] == "sprout", "[sprout] env wins"
    assert "JUDGE_KEY" not in task.env and "SOLVER" not in task.env
    assert task.verifier_env == {"JUDGE_KEY": "k-123"}
    assert task.solution_env == {"SOLVER": "solver", "LITERAL": "solver-value"}
    assert task.declared_env == {"AGENT_VAR": "agent ada", "LITERAL": "$HOME", "BOTH": "sprout"}
    taken = [w for w in task.warnings if "takes this machine's" in w]
    assert len(taken) == 2
    assert taken[1].endswith(
        "task.toml: verifier.env.JUDGE_KEY: takes this machine's $SPROUT_TEST_KEY "
        "(the verifier sees it)"
    )
    monkeypatch.delenv("SPROUT_TEST_NAME")
    assert load_native(env_task(tmp_path)).env["AGENT_VAR"] == "agent nobody", "the default"


def test_an_unset_variable_without_a_default_is_one_line_naming_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SPROUT_TEST_KEY", raising=False)
    task = env_task(tmp_path)
    with pytest.raises(TaskError, match=r"verifier\.env\.JUDGE_KEY: \$\{SPROUT_TEST_KEY\} is not"):
        load_native(task)
    out = tmp_path / "run"
    assert main(["run", str(task), "--model", "oracle", "--out", str(out)]) == 2
    skipped = capsys.readouterr().err.splitlines()[0]
    assert skipped.startswith("sprout run: skipped: harbor-env: ")
    assert "verifier.env.JUDGE_KEY: ${SPROUT_TEST_KEY} is not set on this machine" in skipped


def test_a_bad_variable_name_is_one_line_naming_the_table(tmp_path: Path) -> None:
    task = env_task(tmp_path)
    toml = (task / "task.toml").read_text().replace('SOLVER = "solver"', '"A=B" = "x"')
    (task / "task.toml").write_text(toml)
    with pytest.raises(TaskError, match=r"solution\.env.*'A=B' is no variable name"):
        load_native(task)


@pytest.mark.sandbox
def test_the_oracle_and_its_verifier_see_their_tables_and_the_set_up_none(
    tmp_path: Path, machine_variables: None
) -> None:
    """`tasks check`: the untouched environment fails (no solution-env), the oracle passes
    every check of what each phase saw."""
    require_host_image()
    assert main(["tasks", "check", str(env_task(tmp_path / "tasks"))]) == 0


@pytest.mark.sandbox
def test_another_model_sees_the_environments_variables_but_not_the_verifiers_or_solutions(
    tmp_path: Path, machine_variables: None
) -> None:
    require_host_image()
    task = env_task(tmp_path / "tasks")
    code, observation = what_a_model_sees(task, "env | sort", tmp_path / "run")
    assert code == 0
    assert "AGENT_VAR=agent ada" in observation and "BOTH=sprout" in observation
    assert "JUDGE_KEY" not in observation and "k-123" not in observation
    assert "SOLVER" not in observation


def test_the_variables_are_read_when_the_task_loads_even_from_a_replaced_environ(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hugging Face datasets' `map(num_proc=...)` puts a copy in `os.environ`'s place (verl's
    dataset does it in the same process): a task loaded after reads the copy."""
    monkeypatch.setattr(os, "environ", os.environ.copy())
    monkeypatch.setenv("SPROUT_TEST_NAME", "ada")
    monkeypatch.setenv("SPROUT_TEST_KEY", "k-456")
    assert load_native(env_task(tmp_path)).verifier_env == {"JUDGE_KEY": "k-456"}
