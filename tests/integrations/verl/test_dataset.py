"""`sprout export --format verl-dataset`, read by verl's own `RLHFDataset`, and the agent
loop's YAML read as verl reads it: every row reaches the loop as `agent_name` "sprout"
and a `sprout_task` that loads the task it was written from (docs/integrations.md).

Reading the rows needs verl and its data stack (the `trainers` extra, which `make test`
installs) and the SmolLM2 tokenizer (the dev extra); without them that test skips and
says so. The command itself imports no verl, which a test here holds it to.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from sprout.integrations.verl.play import LoopSettings
from sprout.integrations.verl.rows import DatasetError, row_task
from sprout.tasks import load_tasks
from tests.support.repo_paths import EXAMPLE_TASKS, REPO, SPROUT

LOOP = "sprout.integrations.verl.loop.SproutAgentLoop"
YAML = REPO / "examples" / "verl" / "agent_loop.yaml"
DOC = REPO / "docs" / "integrations.md"
MISSING = "{} is not installed (the trainers extra: make test installs it)"


def export(*arguments: str) -> subprocess.CompletedProcess[str]:
    """`sprout export --format verl-dataset ARGUMENTS`, as a user runs it, from the repo."""
    return subprocess.run(
        [str(SPROUT), "export", "--format", "verl-dataset", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


@pytest.mark.slow
def test_verls_dataset_hands_the_loop_each_task_of_the_export(tmp_path: Path) -> None:
    rl_dataset = pytest.importorskip("verl.utils.dataset.rl_dataset", reason=MISSING.format("verl"))
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer

    from tests.support.smollm2 import cached_folder, missing

    if why := missing():
        pytest.skip(why)
    out = tmp_path / "tasks.parquet"
    done = export("examples/tasks", "--out", str(out))
    assert done.returncode == 0, done.stderr
    expected = load_tasks([EXAMPLE_TASKS]).tasks
    assert done.stdout == f"{len(expected)} tasks\nverl-dataset rows: {out}\n"
    # The data config verl's trainer uses, with its prompt filter on: no instruction is
    # longer than it allows, so no row is left out.
    verl_config = (
        Path(rl_dataset.__file__).parents[2] / "trainer/config/_generated_ppo_trainer.yaml"
    )
    config = OmegaConf.load(verl_config).data
    config.cache_dir = str(tmp_path / "verl-cache")
    config.filter_overlong_prompts = True
    config.max_prompt_length = 2048
    tokenizer = AutoTokenizer.from_pretrained(cached_folder()[0])
    dataset = rl_dataset.RLHFDataset(data_files=[str(out)], tokenizer=tokenizer, config=config)
    items = [dataset[i] for i in range(len(dataset))]
    assert [item["extra_info"]["task_id"] for item in items] == [task.id for task in expected]
    for index, (item, task) in enumerate(zip(items, expected, strict=True)):
        assert item["agent_name"] == "sprout" and item["data_source"] == "sprout"
        assert item["index"] == index
        assert item["raw_prompt"] == [{"role": "user", "content": task.instruction}]
        assert row_task(item["sprout_task"]) == task


def test_the_command_imports_no_verl(tmp_path: Path) -> None:
    """The loop runs inside verl; the command that writes its rows needs none of it."""
    probe = (
        "import sys; from sprout.cli import main; code = main(sys.argv[1:]); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'verl')); sys.exit(code)"
    )
    out = tmp_path / "tasks.parquet"
    arguments = ["export", "--format", "verl-dataset", str(EXAMPLE_TASKS), "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-c", probe, *arguments], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_a_path_with_no_task_is_one_line_and_exit_2(tmp_path: Path) -> None:
    nowhere, out = tmp_path / "nowhere", tmp_path / "tasks.parquet"
    done = export(str(nowhere), "--out", str(out))
    assert done.returncode == 2
    assert done.stderr == f"sprout export: {nowhere}: no such file or folder\n"
    assert not out.exists()


def test_an_out_path_verl_cannot_read_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "tasks.csv"
    done = export("examples/tasks", "--out", str(out))
    assert done.returncode == 2
    assert done.stderr.startswith(f"sprout export: --out {out}: not a .parquet file")
    assert done.stderr.count("\n") == 1 and not out.exists()


def test_a_row_naming_an_unknown_task_or_source_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"^sprout_task\.id: 'no-such-task': no such task in"):
        row_task({"source": str(EXAMPLE_TASKS), "id": "no-such-task", "options": {}})
    gone = tmp_path / "gone"
    with pytest.raises(DatasetError, match=rf"^sprout_task\.source: {gone}: no such file"):
        row_task({"source": str(gone), "id": "blog-slugs"})
    with pytest.raises(DatasetError, match=r"^sprout_task\.source: 'tasks' is not an absolute"):
        row_task({"source": "tasks", "id": "blog-slugs"})


def test_the_yaml_names_the_loop_with_a_group_of_the_documented_n() -> None:
    from omegaconf import OmegaConf

    (entry,) = OmegaConf.to_container(OmegaConf.load(YAML))  # type: ignore[misc]
    assert entry["name"] == "sprout" and entry["_target_"] == LOOP
    settings = {key: value for key, value in entry.items() if key not in ("name", "_target_")}
    loop = LoopSettings(**settings)  # every key is one of the loop's, and each one valid
    assert loop.selector == "reviewer" and loop.workers is None
    group = loop.method().group_size
    assert f"actor_rollout_ref.rollout.n={group}" in main_ppo_line()
    assert f"agent_loop_config_path={YAML.relative_to(REPO)}" in main_ppo_line()


def main_ppo_line() -> str:
    """The `python -m verl.trainer.main_ppo` command of docs/integrations.md, one line."""
    (block,) = [b for b in re.findall(r"```sh\n(.*?)```", DOC.read_text(), re.S) if "main_ppo" in b]
    (line,) = [line for line in block.replace("\\\n", " ").splitlines() if "main_ppo" in line]
    return " ".join(line.split())


def gpu_script_main_ppo_line() -> str:
    """The `main_ppo` command of benchmarks/gpu/verl_sprout.sh, its shell variables given
    values, one line."""
    text = (REPO / "benchmarks" / "gpu" / "verl_sprout.sh").read_text()
    start = text.index('"$BIN/python" -m verl.trainer.main_ppo')
    end = "'trainer.logger=[console]'"
    block = text[start : text.index(end, start) + len(end)]
    block = block.replace('"$WORK/', '"/tmp/verl-work/').replace('"$STEPS"', "2")
    return " ".join(block.replace('"$BIN/python"', "python").replace("\\\n", " ").split())


@pytest.mark.slow
@pytest.mark.parametrize("line", [main_ppo_line, gpu_script_main_ppo_line])
def test_verl_composes_and_validates_the_main_ppo_lines(line: Any) -> None:
    """Hydra refuses a key verl's config lacks, and verl's own check refuses batch sizes
    that do not divide: the docs' line and the GPU script's pass both, as `main_ppo` would
    run them."""
    pytest.importorskip("ray", reason=MISSING.format("ray"))
    config_utils = pytest.importorskip("verl.utils.config", reason=MISSING.format("verl"))
    from hydra import compose, initialize_config_dir
    from verl.trainer.ppo.utils import need_critic, need_reference_policy

    words = shlex.split(line())
    overrides = words[words.index("verl.trainer.main_ppo") + 1 :]
    folder = Path(config_utils.__file__).parents[1] / "trainer" / "config"
    with initialize_config_dir(config_dir=str(folder), version_base=None):
        config = compose(config_name="ppo_trainer", overrides=overrides)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Disabled critic": GRPO has none, as intended
        config_utils.validate_config(
            config,
            use_reference_policy=need_reference_policy(config),
            use_critic=need_critic(config),
        )
    assert config.actor_rollout_ref.rollout.agent.agent_loop_config_path.endswith("agent_loop.yaml")
    assert config.actor_rollout_ref.rollout.n == 8
