#!/usr/bin/env bash
# The search comparison of `sprout bench search` against a real model behind any
# OpenAI-compatible server, with a turn limit, a time budget per attempt and one for
# the whole run. Writes OUT/results.json (after every task) and OUT/table.md.
#
# Usage: benchmarks/real_model.sh BASE_URL MODEL [TASKS] [OUT]
#
#   llama.cpp on a CPU, for the plumbing (SmolLM2-135M will not solve the tasks):
#     python -m llama_cpp.server --model SmolLM2-135M-Instruct.Q4_1.gguf --port 8080 &
#     benchmarks/real_model.sh http://127.0.0.1:8080/v1 smollm2
#   vLLM on an accelerator:
#     vllm serve Qwen/Qwen3-8B --port 8000 &
#     METHODS=pass@4,pass@4-first,shepherd,sprout,entropy \
#       benchmarks/real_model.sh http://127.0.0.1:8000/v1 Qwen/Qwen3-8B
#
# Settings (environment): METHODS (default pass@4,pass@4-first,shepherd,sprout; add
# entropy where the server returns log-probabilities), MAX_TURNS (20), ATTEMPT_S (wall
# budget of one attempt, 600), TOTAL_S (of the whole run, 7200: tasks not finished by
# then are left out of the table and said so), WORKERS (2), TEMPERATURE (0.7),
# MAX_TOKENS (tokens one attempt may spend, 200000), MAX_REPLY_TOKENS (tokens one reply
# may have, 2048), REQUEST_S (timeout of one request, 300), SPROUT (the sprout command).
set -euo pipefail

if [ $# -lt 2 ]; then
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
BASE_URL=$1
MODEL=$2
TASKS=${3:-examples/tasks}
OUT=${4:-runs/real-model-$(date -u +%Y%m%dT%H%M%S)}
METHODS=${METHODS:-pass@4,pass@4-first,shepherd,sprout}
MAX_TURNS=${MAX_TURNS:-20}
ATTEMPT_S=${ATTEMPT_S:-600}
TOTAL_S=${TOTAL_S:-7200}
WORKERS=${WORKERS:-2}
TEMPERATURE=${TEMPERATURE:-0.7}
MAX_TOKENS=${MAX_TOKENS:-200000}
MAX_REPLY_TOKENS=${MAX_REPLY_TOKENS:-2048}
REQUEST_S=${REQUEST_S:-300}
SPROUT=${SPROUT:-.venv/bin/sprout}

mkdir -p "$(dirname "$OUT")"
CONFIG=$(mktemp --suffix=.toml)
trap 'rm -f "$CONFIG"' EXIT
LOGPROBS=false
case ",$METHODS," in *,entropy,*) LOGPROBS=true ;; esac
cat > "$CONFIG" <<EOF
[actor]
max_turns = $MAX_TURNS
max_wall_s = $ATTEMPT_S
max_tokens = $MAX_TOKENS
temperature = $TEMPERATURE
logprobs = $LOGPROBS

[model]
max_tokens = $MAX_REPLY_TOKENS
timeout_s = $REQUEST_S
EOF

echo "real_model.sh: $MODEL at $BASE_URL; methods $METHODS; tasks $TASKS; run folder $OUT" >&2
status=0
timeout "$TOTAL_S" "$SPROUT" run "$TASKS" --model "openai/$MODEL" \
  --base-url "$BASE_URL" --method "$METHODS" --config "$CONFIG" --workers "$WORKERS" \
  --out "$OUT" || status=$?
if [ ! -f "$OUT/sprout.db" ]; then
  echo "real_model.sh: the run did not start (exit $status)" >&2
  exit 1
fi

# The table is recomputed from the store, so a run cut off by TOTAL_S reports what it did.
"$(dirname "$SPROUT")/python" - "$OUT" "$MODEL" "$status" "$METHODS" <<'PY'
import sys
from pathlib import Path

from sprout.runfolder import RunFolder
from sprout.search.summary import write_results

out, model, status, methods = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
run = RunFolder.open(out)
content = write_results(run, methods.split(","))
unfinished = [f"{s['task_id']} {s['method']}" for s in run.tree.schedules() if s["status"] != "done"]
run.close()
lines = [
    f"Model `{model}`; {len(content['tasks'])} tasks"
    + (f"; the run stopped early (exit {status}), unfinished: {', '.join(unfinished)}"
       if unfinished else "") + ".",
    "",
    "| method | resolved | Pass@1 | tokens spent | prefix once | attempts | turns run |",
    "|---|---|---|---|---|---|---|",
]
for name, m in content["methods"].items():
    pass1 = "-" if m["pass_at_1"] is None else f"{m['pass_at_1']:.2f}"
    lines.append(
        f"| {name} | {m['resolved']}/{m['tasks']} | {pass1} | {m['tokens']['spent']:,} | "
        f"{m['tokens']['prefix_once']:,} | {m['attempts']} | {m['turns_executed']} |"
    )
errors = sorted({r["error"] for by in content["tasks"].values() for r in by.values() if "error" in r})
if errors:
    lines += ["", "Errors (not counted as failures of the model):"] + [f"- {e}" for e in errors]
(out / "table.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "real_model.sh: $OUT/table.md" >&2
exit "$status"
