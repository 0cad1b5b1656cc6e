"""The verifier on a sandbox: hidden tests on a throw-away fork, reward, diagnostics, patch."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from sprout.tasks import base_checkpoint_of, load_native
from tests.support.taskfolders import write_task

pytestmark = pytest.mark.sandbox

TEST_SH = """\
cd /app
if python3 -c 'from src.calc import add; assert add(2, 3) == 5' 2>/dev/null; then
  echo '1..2'; echo 'ok 1 - imports'; echo 'ok 2 - add'
else
  echo '1..2'; echo 'ok 1 - imports'; echo 'not ok 2 - add'
  echo '  ---'; echo '  message: add(2, 3) != 5'; echo '  ...'
fi
"""


def make_task(root: Path, results: str = "tap") -> Path:
    return write_task(
        root,
        "calc",
        instruction="Fix add().\n",
        toml=f'[verifier]\ntimeout_sec = 30\n[sprout]\nresults = "{results}"\n',
        dockerfile="FROM host\nWORKDIR /app\nCOPY src/ /app/src/\n",
        environment={"src/calc.py": "def add(a, b):\n    return a - b\n"},
        tests={"test.sh": TEST_SH},
    )


def fixed(layers: LayerStore, base: str) -> str:
    with Sandbox.fork(layers, base) as sandbox:
        sandbox.run(
            "sed -i 's/a - b/a + b/' src/calc.py && echo notes > NOTES && "
            "python3 -c 'import py_compile; py_compile.compile(\"src/calc.py\")' && "
            "mkdir -p .pytest_cache/v && echo '[]' > .pytest_cache/v/nodeids"
        )
        return sandbox.checkpoint()


def test_untouched_task_fails_and_a_fix_passes(overlay_store: LayerStore, tmp_path):
    from sprout.verify import run_verifier

    task = load_native(make_task(tmp_path))
    base = base_checkpoint_of(task, overlay_store)
    untouched = run_verifier(task, overlay_store, base, base)
    assert untouched.reward == 0
    assert untouched.diagnostics.passed == 1 and untouched.diagnostics.failed == 1
    assert "add(2, 3) != 5" in untouched.diagnostics.summary + str(untouched.diagnostics.tests)
    assert untouched.patch == ""

    checkpoint = fixed(overlay_store, base)
    verdict = run_verifier(task, overlay_store, checkpoint, base)
    assert verdict.reward == 1
    assert verdict.diagnostics.passed == 2
    assert "-    return a - b\n+    return a + b\n" in verdict.patch
    assert "--- /dev/null\n+++ b/NOTES\n" in verdict.patch
    assert "__pycache__" not in verdict.patch and ".pytest_cache" not in verdict.patch


def test_hidden_tests_never_reach_an_agent_visible_layer(overlay_store: LayerStore, tmp_path):
    from sprout.verify import run_verifier

    task = load_native(make_task(tmp_path))
    base = base_checkpoint_of(task, overlay_store)
    checkpoint = fixed(overlay_store, base)
    run_verifier(task, overlay_store, checkpoint, base)
    for layer in (base, checkpoint):
        assert overlay_store.read(layer, "/tests/test.sh") is None
        with Sandbox.fork(overlay_store, layer) as sandbox:
            assert sandbox.run("ls /tests /logs 2>&1 | wc -l; ls /tests").exit_code != 0
    every_file = [p for p in Path(overlay_store.path, "l").rglob("*") if p.name == "test.sh"]
    assert every_file == [], "the verifier's fork left its layer behind"


def test_exit_code_results_and_timeouts(overlay_store: LayerStore, tmp_path):
    from sprout.verify import run_verifier

    path = make_task(tmp_path, results="exit-code")
    (path / "tests" / "test.sh").write_text("cd /app && grep -q 'a + b' src/calc.py\n")
    task = load_native(path)
    base = base_checkpoint_of(task, overlay_store)
    assert run_verifier(task, overlay_store, base, base).reward == 0
    assert run_verifier(task, overlay_store, fixed(overlay_store, base), base).reward == 1
    slow = task.model_copy(update={"verifier_command": "sleep 30", "verifier_timeout_s": 0.5})
    verdict = run_verifier(slow, overlay_store, base, base)
    assert verdict.reward == 0
    assert "timed out" in verdict.diagnostics.summary


@pytest.mark.parametrize("verifier_network", [True, False])
def test_the_verifier_runs_under_its_own_network_policy(
    overlay_store: LayerStore, tmp_path, verifier_network
):
    """`[verifier] network_mode` decides the verifier's network, whatever the agent's: here
    the agent has none and the verifier passes only if it sees the interfaces it should."""
    from sprout.verify import run_verifier

    path = make_task(tmp_path, results="exit-code")
    wanted = "lo tap0" if verifier_network else "lo"
    (path / "tests" / "test.sh").write_text(
        "test \"$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | xargs)\" = "
        f"'{wanted}'\n"
    )
    mode = "public" if verifier_network else "no-network"
    toml = (path / "task.toml").read_text().replace("[sprout]\n", "[sprout]\nnetwork = false\n")
    (path / "task.toml").write_text(
        toml.replace("timeout_sec = 30\n", f'timeout_sec = 30\nnetwork_mode = "{mode}"\n')
    )
    task = load_native(path)
    assert (task.network, task.verifier_network) == (False, verifier_network)
    base = base_checkpoint_of(task, overlay_store)
    assert run_verifier(task, overlay_store, base, base).reward == 1
