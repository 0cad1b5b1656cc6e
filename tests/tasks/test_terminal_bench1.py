"""Terminal-Bench 1 folders: task.yaml, the root Dockerfile, run-tests.sh and tests/ to /tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from sprout.task import TaskError
from sprout.tasks import base_checkpoint_of, load_terminal_bench1
from tests.support.taskfolders import (
    HELLO_RUN_TESTS,
    HELLO_TASK_YAML,
    hello_tb1_task,
)


def test_task_yaml_and_dockerfile_are_read(tmp_path: Path):
    task = load_terminal_bench1(hello_tb1_task(tmp_path))
    assert task.id == "hello"
    assert task.instruction == 'Write "Hello, world!" to /app/hello.txt.'
    assert task.workdir == "/app" and task.image == "ubuntu:24.04"
    assert [(s.kind, s.source, s.destination) for s in task.setup] == [
        ("copy", "greeting.txt", "/app/greeting.txt")
    ]
    assert task.agent_timeout_s == 120 and task.verifier_timeout_s == 30
    assert task.results == "pytest" and task.required_tests is None
    assert task.tests_dir == tmp_path / "hello" / "tests"
    assert task.test_files == {"run-tests.sh": HELLO_RUN_TESTS}
    assert task.verifier_command == "export TEST_DIR=/tests; bash /tests/run-tests.sh"
    assert [s.command for s in task.solution] == [
        "cat greeting.txt",
        "echo 'Hello, world!' > /app/hello.txt",
    ]


def test_solution_yaml_gives_one_turn_per_command(tmp_path: Path):
    task = hello_tb1_task(
        tmp_path,
        {
            "solution.sh": "",
            "solution.yaml": "- command: cat greeting.txt\n  block: true\n- echo hi > hello.txt\n",
        },
    )
    steps = load_terminal_bench1(task).solution
    assert [s.command for s in steps] == ["cat greeting.txt", "echo hi > hello.txt"]


def test_sprout_toml_overrides(tmp_path: Path):
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    task = hello_tb1_task(
        tmp_path,
        {
            "task.yaml": HELLO_TASK_YAML.replace("parser_name: pytest", "parser_name: swebench"),
            "sprout.toml": (
                f'[sprout]\nimage = "{rootfs}"\nworkdir = "/srv"\nnetwork = false\n'
                'results = "junit"\nrequired_tests = ["test_outputs.py::test_hello_file"]\n'
                'verifier_command = "cd /app && python3 -m pytest --junitxml=/logs/verifier/j.xml '
                '/tests"\nuser_namespaces = true\n'
            ),
        },
    )
    loaded = load_terminal_bench1(task)
    assert loaded.image == str(rootfs) and loaded.workdir == "/srv" and loaded.network is False
    assert loaded.results == "junit"
    assert loaded.required_tests == ("test_outputs.py::test_hello_file",)
    assert loaded.user_namespaces is True
    assert loaded.verifier_command.startswith("export TEST_DIR=/tests; cd /app && python3")


def test_warnings_for_extra_services_and_a_copy_of_the_tests(tmp_path: Path):
    task = hello_tb1_task(
        tmp_path,
        {
            "Dockerfile": "FROM ubuntu\nWORKDIR /app\nCOPY . /app/\n",
            "docker-compose.yaml": "services:\n  client: {}\n  db: {image: postgres}\n",
        },
    )
    warnings = load_terminal_bench1(task).warnings
    assert any("services client, db: sprout starts none" in w for w in warnings)
    assert any("COPY . puts the hidden tests or the solution" in w for w in warnings)


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {
                "task.yaml": HELLO_TASK_YAML.replace(
                    "max_test_timeout_sec: 30", "max_test_timeout_sec: -1"
                )
            },
            "task.yaml: max_test_timeout_sec: expected a positive number",
        ),
        (
            {
                "task.yaml": HELLO_TASK_YAML.replace(
                    "max_agent_timeout_sec: 120.0", "max_agent_timeout_sec: soon"
                )
            },
            "task.yaml: max_agent_timeout_sec: expected a positive number",
        ),
        ({"task.yaml": "difficulty: easy\n"}, "task.yaml: instruction: expected a non-empty"),
        (
            {"task.yaml": HELLO_TASK_YAML.replace("tags: [file-operations]", "tags: files")},
            "task.yaml: tags: expected a list of strings",
        ),
        (
            {
                "task.yaml": HELLO_TASK_YAML.replace(
                    "run_tests_in_same_shell: false", "run_tests_in_same_shell: 3"
                )
            },
            "task.yaml: run_tests_in_same_shell: expected true or false",
        ),
        (
            {"task.yaml": HELLO_TASK_YAML.replace("parser_name: pytest", "parser_name: mlebench")},
            "task.yaml: parser_name: 'mlebench' is not one sprout reads",
        ),
        ({"task.yaml": "instruction: [unclosed\n"}, "task.yaml: not valid YAML"),
        ({"task.yaml": "- a list\n"}, "task.yaml: expected a mapping of fields, got list"),
        ({"sprout.toml": "[sprout]\nnetwork = 'maybe'\n"}, "sprout.network: expected true, false"),
        ({"sprout.toml": "network = false\n"}, "sprout.toml: network: unknown"),
        ({"run-tests.sh": ""}, "run-tests.sh: missing, and sprout.toml sets no"),
        (
            {"solution.sh": "", "solution.yaml": "- command: ls\n- {block: true}\n"},
            r"\[1\]\.command",
        ),
        ({"docker-compose.yaml": "version: '3'\n"}, "docker-compose.yaml: services: expected"),
        ({"Dockerfile": "FROM ubuntu\nCOPY nothere /app/\n"}, "COPY nothere: no such file"),
        (
            {"Dockerfile": "FROM ubuntu\nCMDD bash\n"},
            "Dockerfile:2: unsupported Dockerfile instruction CMDD",
        ),
    ],
)
def test_bad_fields_name_task_file_and_field(tmp_path: Path, files: dict[str, str], message: str):
    with pytest.raises(TaskError, match=message) as raised:
        load_terminal_bench1(hello_tb1_task(tmp_path, files))
    assert str(raised.value).startswith(("hello: ", str(tmp_path)))


def test_older_descriptions_list_gives_the_instruction(tmp_path: Path):
    task_yaml = "descriptions:\n  - key: base\n    description: Say hello.\n"
    assert (
        load_terminal_bench1(hello_tb1_task(tmp_path, {"task.yaml": task_yaml})).instruction
        == "Say hello."
    )


@pytest.mark.sandbox
def test_verifier_runs_run_tests_on_a_fork_only(overlay_store: LayerStore, tmp_path: Path):
    from sprout.verify import run_verifier

    on_host = {"sprout.toml": '[sprout]\nimage = "host"\n'}  # its pytest, without a build
    task = load_terminal_bench1(hello_tb1_task(tmp_path, on_host))
    base = base_checkpoint_of(task, overlay_store)
    untouched = run_verifier(task, overlay_store, base, base)
    assert untouched.reward == 0
    assert untouched.diagnostics.passed == 1 and untouched.diagnostics.failed == 1
    assert "test_outputs.py::test_hello_file" in untouched.diagnostics.summary

    with Sandbox.fork(overlay_store, base) as sandbox:
        for step in task.solution:
            assert sandbox.run(step.command).exit_code == 0
        solved = sandbox.checkpoint()
    verdict = run_verifier(task, overlay_store, solved, base)
    assert verdict.reward == 1, verdict.diagnostics.summary
    assert verdict.diagnostics.passed == 2

    for layer in (base, solved):
        assert overlay_store.read(layer, "/tests/run-tests.sh") is None
        assert overlay_store.read(layer, "/tests/test_outputs.py") is None
        with Sandbox.fork(overlay_store, layer) as sandbox:
            assert sandbox.read("/tests/test_outputs.py") is None
            assert sandbox.run("ls /tests").exit_code != 0
