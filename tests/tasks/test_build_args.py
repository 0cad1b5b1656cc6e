"""Build args from the task, as Harbor passes them (the docker-compose.yaml beside the
Dockerfile: its task service's `build.args`) and from `[sprout] build_args`; given args
no ARG declares are warned of, as Docker warns; WORKDIR after USER is a step of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.task import TaskError
from sprout.tasks import load_native, load_terminal_bench1
from sprout.tasks.dockerfile.parse import plan_dockerfile
from tests.support.taskfolders import write_task, write_tb1_task

DOCKERFILE = "FROM host\nARG MODE=dev\nARG LEVEL\nRUN echo $MODE $LEVEL\n"


def _native(tmp_path: Path, toml: str | None = None, compose: str | None = None) -> Path:
    return write_task(
        tmp_path,
        "args",
        instruction="Do it.\n",
        toml=toml,
        dockerfile=DOCKERFILE,
        environment={"docker-compose.yaml": compose} if compose is not None else None,
        tests={"test.sh": "true\n"},
    )


def test_the_sprout_table_gives_build_args(tmp_path: Path):
    task = load_native(_native(tmp_path, '[sprout]\nbuild_args = {MODE = "prod", LEVEL = "3"}\n'))
    assert task.setup[0].env == {"MODE": "prod", "LEVEL": "3"}


def test_compose_build_args_of_the_main_service_and_the_sprout_table_wins(tmp_path: Path):
    compose = (
        "services:\n  main:\n    build:\n      context: .\n      args:\n"
        "        MODE: compose\n        LEVEL: 2\n  db:\n    image: postgres\n"
    )
    task = load_native(_native(tmp_path, '[sprout]\nbuild_args = {LEVEL = "9"}\n', compose))
    assert task.setup[0].env == {"MODE": "compose", "LEVEL": "9"}
    assert any("services db, main: sprout starts none of them" in w for w in task.warnings)


def test_a_list_of_args_and_one_without_a_value(tmp_path: Path):
    compose = "services:\n  main:\n    build:\n      args: [MODE=listed, LEVEL]\n"
    task = load_native(_native(tmp_path, compose=compose))
    assert task.setup[0].env == {"MODE": "listed"}
    assert any(
        "LEVEL has no value (Compose takes the host's): left out" in w for w in task.warnings
    )


def test_bad_compose_args_name_the_file_and_field(tmp_path: Path):
    compose = "services:\n  main:\n    build:\n      args: 7\n"
    with pytest.raises(TaskError, match=r"services\.main\.build\.args: expected a mapping"):
        load_native(_native(tmp_path, compose=compose))


def test_terminal_bench1_takes_the_client_services_args(tmp_path: Path):
    folder = write_tb1_task(
        tmp_path,
        "tb1",
        {
            "task.yaml": "instruction: Do it.\n",
            "Dockerfile": DOCKERFILE,
            "docker-compose.yaml": "services:\n  client:\n    build:\n      args: {MODE: tb1}\n",
            "run-tests.sh": "true\n",
        },
    )
    assert load_terminal_bench1(folder).setup[0].env == {"MODE": "tb1"}


def test_args_no_arg_declares_are_warned_of_but_proxies_are_not():
    found = plan_dockerfile(
        DOCKERFILE,
        where="Dockerfile",
        build_args={"MODE": "x", "TYPO": "1", "OTHER": "2", "HTTPS_PROXY": "http://p"},
    )
    assert found.warnings == [
        "Dockerfile: build args OTHER, TYPO were given but no ARG declares them, so they "
        "change nothing"
    ]


def test_workdir_after_a_user_is_a_step_and_before_it_is_not():
    found = plan_dockerfile(
        "FROM host\nWORKDIR /a\nUSER app\nWORKDIR b\nUSER root\nWORKDIR /c\n", where="Dockerfile"
    )
    [step] = found.steps
    assert (step.kind, step.destination, step.user, step.origin) == (
        "workdir",
        "/a/b",
        "app",
        "Dockerfile:4",
    )
    assert (found.user, found.user_origin) == ("root", "Dockerfile:5")
