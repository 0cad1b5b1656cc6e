"""Reading native task folders, translating Dockerfiles, and building cached base layers."""

from __future__ import annotations

import pytest

from sprout.images import ImageCache
from sprout.images.names import resolve_from
from sprout.sandbox import LayerStore, Sandbox
from sprout.task import TaskError
from sprout.tasks import base_checkpoint_of, load_native, split_solution
from sprout.tasks.dockerfile.parse import plan_dockerfile
from sprout.tasks.setup.image_choice import choose_task_images
from tests.support.taskfolders import FIX_CALC_DOCKERFILE, fix_calc_task

ON_HOST = '[sprout]\nimage = "host"\n'
"""For tests of set-up steps: the host image needs no build (tests/images builds Debian's)."""


def test_native_folder_is_read_with_dockerfile_steps(tmp_path):
    task = load_native(fix_calc_task(tmp_path))
    assert task.id == "fix-calc"
    assert task.instruction == "Fix add() in src/calc.py."
    assert task.workdir == "/app"
    assert task.image == "python:3.11-slim"
    assert task.warnings == ()  # the run says what the image is, once (`image_choice`)
    assert task.env == {"APP_MODE": "test", "OTHER": "1"}
    kinds = [(s.kind, s.destination or s.command) for s in task.setup]
    assert kinds[0] == ("copy", "/app/src/")  # a trailing / says: a directory
    assert kinds[1] == ("copy", "/app/")  # `COPY setup.cfg .` puts it into the workdir
    assert kinds[2][0] == "run" and task.setup[2].workdir == "/app"
    assert task.setup[2].shell == ("/bin/sh", "-c")  # Docker's default SHELL
    assert task.setup[2].env["GREETING"] == "hello"
    assert task.verifier_timeout_s == 60
    assert [s.command for s in task.solution] == [
        "set -e\ncat src/calc.py",
        "set -e\nsed -i 's/a - b/a + b/' src/calc.py",
    ]
    assert task.solution[1].wrong == ("set -e\nsed -i 's/a - b/a * b/' src/calc.py",)


def test_from_maps_to_a_root_filesystem_folder(tmp_path):
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    plan = plan_dockerfile("FROM debian:12\n", where="D", images={"debian": str(rootfs)})
    assert plan.image == str(rootfs)
    assert plan.warnings == []


@pytest.mark.parametrize("instruction", ["FOOBAR", "COPYY", "RUNN"])
def test_unknown_instructions_are_named_with_their_line(tmp_path, instruction):
    task = fix_calc_task(tmp_path, FIX_CALC_DOCKERFILE + f"{instruction} something\n")
    with pytest.raises(
        TaskError, match=f"Dockerfile:9: unsupported Dockerfile instruction {instruction}"
    ):
        load_native(task)


@pytest.mark.parametrize(
    "line",
    ['CMD ["python3", "-m", "calc"]', "ENTRYPOINT /bin/true", "EXPOSE 8080", "LABEL a=b"],
)
def test_container_instructions_are_recorded_not_refused(tmp_path, line):
    task = load_native(fix_calc_task(tmp_path, FIX_CALC_DOCKERFILE + line + "\n"))
    assert [s.kind for s in task.setup] == ["copy", "copy", "run"]


@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ("[sprout]\nnetwork = 'maybe'\n", "sprout.network"),
        ("[sprout]\nresults = 'xml'\n", "sprout.results"),
        ("[sprout]\nimagee = 'host'\n", "sprout.imagee"),
        ("[sprout]\nworkdir = 'app'\n", "sprout.workdir"),
        ("[environment]\ncpus = 0\n", "environment.cpus"),
        ("[environment]\nmemory_mb = 'lots'\n", "environment.memory_mb"),
        ("[environment]\nstorage = '10 parsecs'\n", "environment.storage"),
        ("[environment]\ncpus = true\n", "environment.cpus"),
        ("[environment]\nmemory = ''\n", "environment.memory"),
        ("[environment]\nmemory = 'nan'\n", "environment.memory"),
        ("[environment]\nnetwork_mode = 'open'\n", "environment.network_mode"),
        ("[agent]\nallowed_hosts = ['10.0.0.1']\n", "agent.allowed_hosts.0"),
        ("[environment]\nallowed_hosts = 'pypi.org'\n", "environment.allowed_hosts"),
        ("[sprout]\nallow = ['*.org']\n", "sprout.allow.0"),
        ("[sprout]\nsetup_network = 'open'\n", "sprout.setup_network"),
        ("[environment]\nallow_internet = 'no'\n", "environment.allow_internet"),
        ("[agent]\ntimeout_sec = '60'\n", "agent.timeout_sec"),
        ("[agent]\ntimeout_sec = -1\n", "agent.timeout_sec"),
    ],
)
def test_bad_sprout_fields_name_task_file_and_field(tmp_path, toml, field):
    with pytest.raises(TaskError) as raised:
        load_native(fix_calc_task(tmp_path, toml=toml))
    message = str(raised.value)
    assert message.startswith("fix-calc: ")
    assert "task.toml" in message
    assert field in message


def test_missing_files_are_named(tmp_path):
    task = fix_calc_task(tmp_path)
    (task / "tests" / "test.sh").unlink()
    with pytest.raises(TaskError, match=r"test\.sh: missing"):
        load_native(task)
    (task / "instruction.md").unlink()
    with pytest.raises(TaskError, match=r"instruction\.md: missing"):
        load_native(task)


def test_a_copy_of_a_missing_file_is_named(tmp_path):
    with pytest.raises(TaskError, match="COPY nothere"):
        load_native(fix_calc_task(tmp_path, FIX_CALC_DOCKERFILE + "COPY nothere /app/\n"))


def test_a_solution_without_markers_runs_as_one_script_byte_for_byte():
    script = "#!/bin/sh\n# step one: explore\necho a\n\necho b\n"
    (inline,) = split_solution(script)
    assert inline.command == (
        "cat > /tmp/sprout-solution.sh <<'SPROUT_SOLUTION'\n"
        f"{script}SPROUT_SOLUTION\nbash /tmp/sprout-solution.sh"
    )
    (from_file,) = split_solution(script, "/solution/solve.sh")
    assert from_file.command == "bash /solution/solve.sh"
    assert split_solution("\n \n") == ()


HEREDOC_SOLUTION = """#!/bin/bash
set -e
# the preamble's comments stay

cd /app
# step
cat > main.c <<'EOF'
#include <stdio.h>
# step
int main(void) { return 0; }
EOF
cat <<-PY > tool.py
\t# wrong: not a marker inside a heredoc
\tprint(1)
\tPY
# wrong: touch main.c
# step
echo done
"""


def test_markers_count_only_outside_heredocs_and_every_other_line_is_kept():
    first, second = split_solution(HEREDOC_SOLUTION)
    head = "set -e\n# the preamble's comments stay\n\ncd /app"
    assert first.command == (
        f"{head}\ncat > main.c <<'EOF'\n#include <stdio.h>\n# step\n"
        "int main(void) { return 0; }\nEOF\ncat <<-PY > tool.py\n"
        "\t# wrong: not a marker inside a heredoc\n\tprint(1)\n\tPY"
    )
    assert first.wrong == (f"{head}\ntouch main.c",)
    assert second.command == f"{head}\necho done"


@pytest.mark.sandbox
def test_base_layer_is_built_once_and_hides_the_tests(overlay_store: LayerStore, tmp_path):
    task = load_native(fix_calc_task(tmp_path, toml=ON_HOST))
    first = base_checkpoint_of(task, overlay_store)
    again = base_checkpoint_of(task, overlay_store)
    assert again == first  # cached: the RUN step (which stamps the time) did not run again
    with Sandbox.fork(overlay_store, first) as sandbox:
        seen = sandbox.run("pwd; cat built.txt; ls src; echo $APP_MODE; ls /tests 2>&1 | head -1")
    lines = seen.output.splitlines()
    assert lines[:4] == ["/app", "hello test", "calc.py", "test"]
    assert "No such file" in lines[4]
    overlay_store.gc()  # a named base layer survives GC with nothing else kept
    with Sandbox.fork(overlay_store, first) as sandbox:
        assert sandbox.run("cat built.txt").output == "hello test\n"


@pytest.mark.sandbox
def test_a_failing_setup_step_names_the_task_and_step(overlay_store: LayerStore, tmp_path):
    task = load_native(
        fix_calc_task(
            tmp_path, FIX_CALC_DOCKERFILE + "RUN echo broken >&2 && exit 7\n", toml=ON_HOST
        )
    )
    with pytest.raises(TaskError, match=r"fix-calc: set-up step 4 .* exit code 7: broken"):
        base_checkpoint_of(task, overlay_store)


def interfaces(sandbox: Sandbox) -> list[str]:
    """The network interfaces a sandbox's calls see (from its own /proc/net/dev)."""
    output = sandbox.run("tail -n +3 /proc/net/dev").output
    return sorted(line.split(":")[0].strip() for line in output.splitlines())


def test_an_offline_task_gives_the_agent_only_loopback(overlay_store: LayerStore, tmp_path):
    task = load_native(fix_calc_task(tmp_path, toml=ON_HOST + "network = false\n"))
    base = base_checkpoint_of(task, overlay_store)
    with Sandbox.fork(overlay_store, base) as agent:
        assert interfaces(agent) == ["lo"]
        assert agent.run("cat built.txt").output == "hello test\n"  # set-up still ran
        turn = agent.checkpoint()
    with Sandbox.fork(overlay_store, turn) as later:
        assert interfaces(later) == ["lo"], "every later turn inherits it"
    with Sandbox.fork(overlay_store, turn, network=True) as verifier:
        assert interfaces(verifier) != ["lo"]


@pytest.mark.parametrize(
    ("toml", "agent", "verifier"),
    [
        ("", True, True),
        ("[environment]\nallow_internet = false\n", False, False),
        ('[environment]\nnetwork_mode = "no-network"\n', False, False),
        ('[agent]\nnetwork_mode = "no-network"\n', False, True),
        ('network_mode = "no-network"\n', True, False),  # in fix_calc_task's [verifier]
        ('network_mode = "public"\n[environment]\nnetwork_mode = "no-network"\n', False, True),
        ('[agent]\nnetwork_mode = "no-network"\n[sprout]\nnetwork = true\n', True, True),
        (
            '[agent]\nnetwork_mode = "allowlist"\n'
            'allowed_hosts = ["pypi.org", "*.pythonhosted.org"]\n',
            ("pypi.org", "*.pythonhosted.org"),
            True,
        ),
        (
            'network_mode = "allowlist"\n[environment]\nallowed_hosts = ["pypi.org:443"]\n',
            True,
            ("pypi.org:443",),
        ),
        ('[environment]\nnetwork_mode = "allowlist"\n', (), ()),  # Harbor: no egress at all
        (
            '[sprout]\nnetwork = "allowlist"\nallow = ["198.51.100.7:8080"]\n',
            ("198.51.100.7:8080",),
            True,
        ),
        ('[sprout]\nnetwork = "none"\n', False, True),
    ],
)
def test_each_phase_gets_the_network_harbor_names_for_it(tmp_path, toml, agent, verifier):
    """Harbor's `network_mode` of `[agent]` and `[verifier]`, else `[environment]`'s (or its
    older `allow_internet`); `[sprout] network` sets the agent's over them."""
    task = load_native(fix_calc_task(tmp_path, toml=toml))
    assert (task.network, task.verifier_network) == (agent, verifier)
    assert task.setup_network is True, "set-up has the network, as docker build has"


@pytest.mark.parametrize(
    ("toml", "setup"),
    [
        ('[sprout]\nsetup_network = "none"\n', False),
        ('[sprout]\nsetup_network = "allowlist"\nallow = ["pypi.org"]\n', ("pypi.org",)),
        ('[environment]\nnetwork_mode = "no-network"\n', True),
    ],
)
def test_set_up_has_the_network_unless_sprout_narrows_it(tmp_path, toml, setup):
    assert load_native(fix_calc_task(tmp_path, toml=toml)).setup_network == setup


@pytest.mark.parametrize(
    ("toml", "cpus", "memory", "disk"),
    [
        ("[environment]\ncpus = 1\nmemory_mb = 2048\nstorage_mb = 10240\n", 1.0, 2 << 30, 10 << 30),
        ('[environment]\ncpus = 0.5\nmemory = "512M"\nstorage = "2G"\n', 0.5, 512 << 20, 2 << 30),
        (
            '[environment]\nmemory_mb = 1024\nmemory = "2G"\nstorage = "1.5GiB"\n',
            None,
            1 << 30,
            3 << 29,
        ),
        ("", None, None, None),
    ],
)
def test_environment_resources_are_read(tmp_path, toml, cpus, memory, disk):
    task = load_native(fix_calc_task(tmp_path, toml=toml))
    assert (task.cpus, task.memory_bytes, task.disk_bytes) == (cpus, memory, disk)


def test_harbors_fields_that_sprout_does_not_read_are_accepted(tmp_path):
    """Harbor adds fields to its tables over time: a task written for a newer Harbor loads."""
    toml = (
        '[metadata]\nauthor_name = "A"\ntags = ["x"]\n'
        '[agent]\ntimeout_sec = 120.0\nuser = "agent"\n'
        '[environment]\nbuild_timeout_sec = 600.0\ndocker_image = "x:1"\ncpus = 2\n'
        "memory_mb = 4096\ngpus = 0\nallow_internet = true\n"
        "[solution]\nenv = {}\n"
    )
    task = load_native(fix_calc_task(tmp_path, toml=toml))
    assert (task.agent_timeout_s, task.cpus, task.memory_bytes) == (120.0, 2.0, 4 << 30)


@pytest.mark.parametrize("table", ["verifier", "agent", "environment"])
def test_a_harness_table_that_is_no_table_is_named(tmp_path, table):
    task = fix_calc_task(tmp_path)
    (task / "task.toml").write_text(f"{table} = 3\n")
    with pytest.raises(TaskError, match=f"^fix-calc: .*task.toml: {table}: Input should be"):
        load_native(task)


def test_the_agent_gets_the_tasks_limits_and_set_up_the_defaults(
    overlay_store: LayerStore, tmp_path
):
    toml = ON_HOST + '[environment]\ncpus = 1\nmemory = "300M"\n'
    task = load_native(fix_calc_task(tmp_path, toml=toml))
    base = base_checkpoint_of(task, overlay_store)
    limits = overlay_store.layer(base).config.limits
    assert (limits.cpus, limits.memory_bytes) == (1.0, 300 << 20)
    with Sandbox.fork(overlay_store, base) as agent:
        hog = agent.run("python3 -c 'x = bytearray(600 * 1024 * 1024)'", timeout=60)
        assert hog.exit_code != 0, "the task's memory limit did not bind"
        assert agent.run("cat built.txt").output == "hello test\n"


@pytest.mark.parametrize(
    ("base", "image", "approximation"),
    [
        ("python:3.13-slim-bookworm", "python:3.13-slim-bookworm", "trixie with its Python 3.13"),
        ("docker.io/library/python:3.11", "python:3.11", "bookworm with its Python 3.11"),
        ("ubuntu:24.04", "ubuntu:24.04", "Debian trixie, the nearest Debian to Ubuntu 24.04"),
        ("debian:bookworm-slim", "debian:bookworm-slim", None),
        (
            "ghcr.io/laude-institute/t-bench/python-3-13:20250620",
            "ghcr.io/laude-institute/t-bench/python-3-13:20250620",
            "Terminal-Bench's Python 3.13 base",
        ),
    ],
)
def test_from_names_an_image_sprout_builds(tmp_path, base, image, approximation):
    task = load_native(
        fix_calc_task(tmp_path, FIX_CALC_DOCKERFILE.replace("python:3.11-slim", base))
    )
    assert task.image == image
    request = resolve_from(task.image)
    assert request is not None
    if approximation is None:
        assert request.approximation == ""
    else:
        assert approximation in request.approximation


def test_an_image_no_registry_has_and_sprout_cannot_build_skips_the_task_with_the_way_out(
    tmp_path,
):
    task = load_native(
        fix_calc_task(tmp_path, FIX_CALC_DOCKERFILE.replace("python:3.11-slim", "acme/tool:2"))
    )
    said: list[str] = []
    chosen = choose_task_images([task], cache=ImageCache(tmp_path / "cache"), say=said.append)
    assert chosen.tasks == [] and said == []
    [error] = chosen.errors  # the suite's registries.conf sends docker.io to a closed port
    assert error.startswith("fix-calc: image acme/tool:2: no registry answered (docker.io: ")
    assert "--images approximate" in error
    folder = fix_calc_task(tmp_path / "b", toml='[sprout]\nimage = "./rootfs"\n')
    with pytest.raises(TaskError, match=r"sprout.image: .*/rootfs is not a folder"):
        load_native(folder)
