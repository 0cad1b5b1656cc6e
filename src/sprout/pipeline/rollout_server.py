"""The server that samples `sprout train`'s rollouts, put on the latest weights every step.

`sprout train --rollout-server KIND` plays each step's rollouts through a
token-exact server client (`llamacpp/`, `sglang/`) instead of the in-process
model: before the step, the server is made to serve the weights the previous
step saved, and the ids it samples are the ids the learner trains on. Each
kind has one way to change weights:

- `llamacpp`: sprout owns the server. The saved folder is converted to GGUF by
  llama.cpp's own converter (the one kept beside the binary) and the server is
  restarted on it, on the same loopback port.
- `sglang`: a server the user runs (`--base-url`), told to load the saved folder
  with SGLang's `POST /update_weights_from_disk` (`{"model_path": ...}`).

The learner's tokenizer and the server's must be one vocabulary, or the ids
would mean other tokens to the learner: `check_vocabulary` compares them every
step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sprout.errors import SproutError
from sprout.models.http_json import JsonServer
from sprout.models.llamacpp import LlamaCppServer
from sprout.models.llamacpp_process import LlamaServer, ServerError, convert_to_gguf
from sprout.models.types import ModelError

SERVERS = ("llamacpp", "sglang")
"""The kinds `--rollout-server` takes; each is also its client's `--model` prefix."""
NOT_YET = {
    "vllm": "vLLM's weight reload (LoRA loading or sleep/wake-up and reload) is not "
    "supported yet (docs/training.md); use llamacpp or sglang",
}
PROBE = [
    {"role": "system", "content": "Answer in the shell."},
    {"role": "user", "content": "ls -la ~/src && grep -rn 'def ' . | head\n\tdéjà vu: 42"},
]
"""A conversation whose rendering (with the template's special tokens) both tokenizers
must turn into the same ids."""


class RolloutServerError(SproutError, ValueError):
    """A rollout server that cannot serve the step's weights, or serves another vocabulary."""


@dataclass(frozen=True)
class Served:
    """A server on one step's weights."""

    url: str
    weights: str
    """What it loaded: the GGUF file (llama.cpp) or the model folder (SGLang)."""
    seconds: float
    """How long putting the weights on the server took (conversion and restart)."""


class RolloutServer(Protocol):
    """A server that `serve`s a saved policy; `close` stops what sprout started."""

    kind: str

    def serve(self, policy: Path, step: int) -> Served:
        """Put `policy` (the weights after `step` learner steps) on the server."""
        ...

    def check(self, url: str, tokenizer: Any, policy: Path) -> dict[str, Any]:
        """Refuse a server at `url` whose ids the learner (`policy`'s `tokenizer`) would
        read as other tokens; what identifies the served model, for the step's log."""
        ...

    def close(self) -> None: ...


class LlamaCppRollouts:
    """A llama-server that sprout starts on loopback and restarts on each step's GGUF file,
    kept in `FOLDER` (with the server's log); only the file being served is kept."""

    kind = "llamacpp"

    def __init__(self, folder: Path, *, outtype: str = "f32") -> None:
        self.folder = folder
        self.outtype = outtype
        self.server: LlamaServer | None = None

    def serve(self, policy: Path, step: int) -> Served:
        started = time.monotonic()
        self.folder.mkdir(parents=True, exist_ok=True)
        gguf = self.folder / f"step-{step}.gguf"
        try:
            convert_to_gguf(policy, gguf, outtype=self.outtype)
            if self.server is None:
                self.server = LlamaServer(gguf, log=self.folder / "llama-server.log")
                url = self.server.start()
            else:
                url = self.server.restart(gguf)
        except ServerError as error:
            raise RolloutServerError(f"--rollout-server llamacpp: {error}") from None
        for old in self.folder.glob("step-*.gguf"):
            if old != gguf:
                old.unlink()
        return Served(url, str(gguf), time.monotonic() - started)

    def check(self, url: str, tokenizer: Any, policy: Path) -> dict[str, Any]:
        return check_vocabulary(url, tokenizer, policy)

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()


class SGLangRollouts:
    """An SGLang server the user runs at `url`, which loads each step's folder from disk
    (the folder must be readable where the server runs)."""

    kind = "sglang"

    def __init__(self, url: str, *, timeout_s: float = 600.0) -> None:
        self.http = JsonServer(url, timeout_s=timeout_s, retries=0)

    def serve(self, policy: Path, step: int) -> Served:
        started = time.monotonic()
        route = f"{self.http.base_url}/update_weights_from_disk"
        try:
            reply = self.http.post("/update_weights_from_disk", {"model_path": str(policy)})
        except ModelError as error:
            raise RolloutServerError(f"--rollout-server sglang: {error}") from None
        if reply.get("success") is not True:
            raise RolloutServerError(
                f"--rollout-server sglang: {route} did not load {policy}: "
                f"{reply.get('message', 'no message')}"
            )
        return Served(self.http.base_url, str(policy), time.monotonic() - started)

    def check(self, url: str, tokenizer: Any, policy: Path) -> dict[str, Any]:
        """`sglang/` renders and tokenizes with `policy`'s own tokenizer: nothing to compare."""
        return {"server": "sglang", "model_path": str(policy)}

    def close(self) -> None:
        """The server is the user's: it keeps running."""


def rollout_server(kind: str, out: Path, base_url: str | None) -> RolloutServer:
    """The `RolloutServer` of `--rollout-server KIND` for the run folder `out`."""
    if kind in NOT_YET:
        raise RolloutServerError(f"--rollout-server {kind}: {NOT_YET[kind]}")
    if kind not in SERVERS:
        raise RolloutServerError(f"--rollout-server {kind}: expected one of {', '.join(SERVERS)}")
    if kind == "llamacpp":
        if base_url:
            raise RolloutServerError(
                "--base-url: --rollout-server llamacpp starts its own server; leave it out"
            )
        return LlamaCppRollouts(out / "rollout-server")
    if not base_url:
        raise RolloutServerError(
            "--rollout-server sglang: needs --base-url, the address of the server you run"
        )
    try:
        return SGLangRollouts(base_url)
    except ModelError as error:
        raise RolloutServerError(str(error)) from None


def check_vocabulary(url: str, tokenizer: Any, learner: Path) -> dict[str, Any]:
    """Refuse a llama.cpp server at `url` whose tokenizer gives other ids than the learner's
    `tokenizer` (the policy `learner`) for the probe conversation or for the end of a turn;
    the server's fingerprint (the model file it loaded) when they agree."""
    server = LlamaCppServer(JsonServer(url, timeout_s=60, retries=1))
    text = str(tokenizer.apply_chat_template(PROBE, tokenize=False, add_generation_prompt=True))
    try:
        theirs = [*server.encode(text), server.end_of_turn()]
        fingerprint = server.fingerprint()
    except ModelError as error:
        raise RolloutServerError(f"--rollout-server llamacpp: {error}") from None
    ours = [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]
    if theirs != ours:
        first = next(
            (k for k, pair in enumerate(zip(theirs, ours, strict=False)) if pair[0] != pair[1]),
            min(len(theirs), len(ours)),
        )
        raise RolloutServerError(
            f"the rollout server's tokenizer ({fingerprint['model_path']} at {url}) and the "
            f"learner's ({learner}) are not one vocabulary: a probe text (with the end of "
            f"turn) gives {len(theirs)} and {len(ours)} ids, first differing at {first} "
            f"({theirs[first : first + 3]} vs {ours[first : first + 3]})"
        )
    return fingerprint
