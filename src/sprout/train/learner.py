"""The learner: one clipped-surrogate policy-gradient step on a Hugging Face causal LM.

GRPO-style, as DAPO and Dr.GRPO run it: per-token ratio r = π(a)/π_old(a),
loss max(-A·r, -A·clip(r, 1-clip_low, 1+clip_high)) on the tokens with loss
mask 1, no KL term and no reference model, aggregated over the tokens of the
whole batch (`token-mean`, DAPO's choice) or per sequence. The advantages come
precomputed in the samples (tree credit, `sprout.train.credit`).

torch and transformers are imported here and in `forward.py` only, so that
`import sprout.train` works without the `train` extra.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sprout.train.batching import (
    Family,
    LearnerError,
    check_samples,
    families,
    micro_batches,
    padded_tokens,
    zero_variance_fraction,
)
from sprout.train.learnerconfig import LearnerConfig, StepStats
from sprout.train.modelfolder import cast_state_dict, save_folder_atomically, set_config_dtype

if TYPE_CHECKING:
    import torch

    from sprout.train.loss import Totals
    from sprout.train.samples import Sample

__all__ = ["Learner", "LearnerConfig", "LearnerError", "StepStats", "learner_step"]

OPTIMIZER_FILE = "optimizer.pt"
"""AdamW's state, saved beside the weights."""


class Learner:
    """A causal LM, its tokenizer and its AdamW state, kept across steps."""

    def __init__(self, model_path: str | Path, config: LearnerConfig | None = None) -> None:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        self.config = config or LearnerConfig()
        path = Path(model_path)
        self.path = path
        if not (path / "config.json").is_file():
            why = "does not exist" if not path.exists() else "has no config.json"
            raise LearnerError(f"model {path}: {why} (expected a Hugging Face model folder)")
        self.device = _device(self.config.device)
        self.autocast = _autocast_dtype(self.config.dtype, self.device)
        param_dtype = torch.bfloat16 if self.config.param_dtype == "bf16" else torch.float32
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            saved = AutoConfig.from_pretrained(path, local_files_only=True).dtype
            self.model = AutoModelForCausalLM.from_pretrained(
                path, dtype=param_dtype, local_files_only=True
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise LearnerError(f"model {path}: {str(error).splitlines()[0]}") from None
        # Saved back in the checkpoint's own dtype, whatever precision trained it.
        self.saved_dtype = saved if isinstance(saved, torch.dtype) else param_dtype
        self.model.to(self.device)
        # No dropout, ever: π_old and π must be the same function of the weights,
        # or the ratio is noise before the first update.
        self.model.eval()
        self.notes: list[str] = []
        """Things a log should say once (a setting this model could not honour)."""
        self.share_prefixes = self.config.share_prefixes
        if self.share_prefixes and (why := _unshareable(self.model.config)):
            self.share_prefixes = False
            self.notes.append(f"every child's prefix is forwarded again: {why}")
        self.optimizer = torch.optim.AdamW(
            [p for p in self.model.parameters() if p.requires_grad],
            lr=self.config.lr,
            betas=self.config.betas,
            eps=self.config.eps,
            weight_decay=self.config.weight_decay,
        )
        self._load_optimizer(path)
        # Padding is masked out everywhere; any id the embedding has will do.
        pad = self.tokenizer.pad_token_id
        self.pad_id: int = pad if pad is not None else (self.tokenizer.eos_token_id or 0)

    def check_tokenizer(self, stored: Mapping[str, Any] | None, *, where: str) -> None:
        """Refuse token ids that another tokenizer made (`stored`: the fingerprint a run or
        an export recorded; None when it recorded none)."""
        from sprout.models import ModelError
        from sprout.models.fingerprint import check_tokenizer, tokenizer_fingerprint

        mine = {**tokenizer_fingerprint(self.tokenizer), "model": str(self.path)}
        try:
            check_tokenizer(stored, mine, where=str(where))
        except ModelError as error:
            raise LearnerError(str(error)) from None

    @property
    def context(self) -> int:
        """The longest sequence the model takes (max_position_embeddings)."""
        return int(getattr(self.model.config, "max_position_embeddings", 0) or 1 << 62)

    def check(self, samples: Sequence[Sample]) -> None:
        """Raise LearnerError naming the first sample the model cannot train on."""
        vocab = self.model.get_input_embeddings().num_embeddings
        check_samples(samples, context=self.context, vocab=vocab)

    def step(self, samples: Sequence[Sample]) -> StepStats:
        """One optimizer step on `samples`; the weights change in place."""
        import torch

        start = time.perf_counter()
        stats = self.accumulate(samples)
        params = [p for p in self.model.parameters() if p.requires_grad]
        limit = self.config.max_grad_norm
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, limit or math.inf))
        if not math.isfinite(grad_norm):
            self.optimizer.zero_grad(set_to_none=True)
            raise LearnerError(f"gradient norm is {grad_norm}: update skipped, weights unchanged")
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return replace(stats, grad_norm=grad_norm, step_seconds=time.perf_counter() - start)

    def accumulate(self, samples: Sequence[Sample]) -> StepStats:
        """The batch's gradient, left in the parameters' `.grad`; no update.

        `step` is this, then gradient clipping and AdamW. On its own it lets a
        test compare gradients (micro-batch sizes, prefix sharing) exactly.
        The stats it returns have no grad norm yet (NaN).
        """
        from sprout.train.loss import Totals

        start = time.perf_counter()
        self.check(samples)
        lengths = [len(s.input_ids) for s in samples]
        plan = self._plan(samples)
        source, old = self._old_logprobs(samples, plan)
        totals = Totals.of(samples)
        sums: dict[str, Any] = {}
        self.optimizer.zero_grad(set_to_none=True)
        for batch, old_lp in zip(plan, old, strict=True):
            with self._autocast():
                logp = self._logprobs(samples, batch)
            loss = self._loss(samples, batch, logp, old_lp, totals, sums)
            loss.backward()
        groups, flat = zero_variance_fraction(samples)
        n = max(totals.tokens, 1)
        sums = {key: float(value) for key, value in sums.items()}
        return StepStats(
            loss=sums["loss"],
            clip_fraction=sums["clipped"] / n,
            approx_kl=sums["k3"] / n,
            mean_advantage=sums["advantage"] / n,
            grad_norm=math.nan,
            zero_variance_groups=flat,
            groups=groups,
            samples=len(samples),
            tokens_trained=totals.tokens,
            tokens_in_batch=sum(lengths),
            tokens_forwarded=sum(_forwarded(f, lengths) for batch in plan for f in batch),
            tokens_padded=sum(padded_tokens(batch, lengths) for batch in plan),
            micro_batches=len(plan),
            old_logprobs=source,
            rollout_logprob_gap=sums["gap"] / sums["gap_n"] if sums["gap_n"] else None,
            lr=self.optimizer.param_groups[0]["lr"],
            step_seconds=time.perf_counter() - start,
        )

    def logprobs(self, samples: Sequence[Sample]) -> list[torch.Tensor | None]:
        """Each sample's per-token log-probs under the current weights, no grad.

        Position t holds log p(token t | tokens before t); position 0 holds 0.
        None for a sample the learner would not forward (no trained token, no child).
        """
        import torch

        from sprout.train.forward import members

        self.check(samples)
        out: list[torch.Tensor | None] = [None] * len(samples)
        with torch.no_grad(), self._autocast():
            for batch in self._plan(samples):
                rows = self._logprobs(samples, batch)
                for row, index in enumerate(members(batch)):
                    out[index] = rows[row, : len(samples[index].input_ids)]
        return out

    def save(self, path: str | Path) -> Path:
        """Write the weights (in the checkpoint's own dtype), the tokenizer and the AdamW
        state (`optimizer.pt`), atomically: the next step, in this process or another,
        goes on with the same moments instead of starting AdamW afresh."""
        import torch

        def write(folder: Path) -> None:
            state = cast_state_dict(self.model, self.saved_dtype)
            self.model.save_pretrained(folder, state_dict=state)
            if state is not None:
                set_config_dtype(folder, self.saved_dtype)
            self.tokenizer.save_pretrained(folder)
            torch.save(self.optimizer.state_dict(), folder / OPTIMIZER_FILE)

        return save_folder_atomically(path, write)

    def _load_optimizer(self, path: Path) -> None:
        """Resume AdamW's moments from a folder this learner saved; a plain model folder
        (no `optimizer.pt`) starts them at zero."""
        import torch

        saved = path / OPTIMIZER_FILE
        if not saved.is_file():
            return
        try:
            self.optimizer.load_state_dict(torch.load(saved, map_location=self.device))
        except (RuntimeError, ValueError, KeyError) as error:
            raise LearnerError(
                f"model {path}: {OPTIMIZER_FILE} does not fit this model ({error}); "
                "remove it to start the optimizer afresh"
            ) from None
        for group in self.optimizer.param_groups:  # this run's settings, not the saved ones
            group.update(lr=self.config.lr, weight_decay=self.config.weight_decay)

    # ------------------------------------------------------------------ internals

    def _plan(self, samples: Sequence[Sample]) -> list[list[Family]]:
        return micro_batches(
            families(samples, share_prefixes=self.share_prefixes),
            [len(s.input_ids) for s in samples],
            max_tokens=self.config.micro_batch_tokens,
            max_samples=self.config.micro_batch_samples,
        )

    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        import torch

        if self.autocast is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast)

    def _logprobs(self, samples: Sequence[Sample], batch: Sequence[Family]) -> torch.Tensor:
        import torch

        from sprout.train.forward import micro_batch_logprobs

        mask_dtype = self.autocast or next(self.model.parameters()).dtype
        if mask_dtype not in (torch.float32, torch.bfloat16, torch.float16):
            mask_dtype = torch.float32
        return micro_batch_logprobs(
            self.model,
            samples,
            batch,
            temperature=self.config.temperature,
            pad_id=self.pad_id,
            mask_dtype=mask_dtype,
        )

    def _old_logprobs(
        self, samples: Sequence[Sample], plan: Sequence[Sequence[Family]]
    ) -> tuple[str, list[torch.Tensor]]:
        """π_old per micro-batch, laid out as the micro-batch's rows."""
        import torch

        from sprout.train.forward import members, per_token

        mode = self.config.old_logprobs
        missing = next((s for s in samples if _lacks_rollout_logprobs(s)), None)
        if mode == "rollout" and missing is not None:
            raise LearnerError(
                f"task {missing.task_id} attempt {missing.attempt_id}: a trained token has no "
                "rollout log-prob (old_logprobs = rollout); use recompute or auto"
            )
        if mode == "rollout" or (mode == "auto" and missing is None):
            return "rollout", [
                per_token(
                    samples, members(batch), "rollout_logprobs", _width(samples, batch), self.device
                )
                for batch in plan
            ]
        out = []
        with torch.no_grad(), self._autocast():
            for batch in plan:
                out.append(self._logprobs(samples, batch).detach())
        return "recomputed", out

    def _loss(
        self,
        samples: Sequence[Sample],
        batch: Sequence[Family],
        logp: torch.Tensor,
        old: torch.Tensor,
        totals: Totals,
        sums: dict[str, Any],
    ) -> torch.Tensor:
        """This micro-batch's share of the batch loss; adds its figures to `sums`."""
        from sprout.train.forward import members, per_token
        from sprout.train.loss import micro_batch_loss

        rows, width = members(batch), logp.shape[1]
        loss, figures = micro_batch_loss(
            logp,
            old,
            per_token(samples, rows, "loss_mask", width, self.device),
            per_token(samples, rows, "advantages", width, self.device),
            per_token(samples, rows, "rollout_logprobs", width, self.device),
            clip_low=self.config.clip_low,
            clip_high=self.config.clip_high,
            loss_agg=self.config.loss_agg,
            totals=totals,
        )
        for key, value in figures.items():
            sums[key] = sums.get(key, 0) + value
        return loss


def _lacks_rollout_logprobs(sample: Sample) -> bool:
    pairs = zip(sample.loss_mask, sample.rollout_logprobs, strict=True)
    return any(m and lp is None for m, lp in pairs)


def learner_step(
    samples: Sequence[Sample],
    model_path: str | Path,
    out: str | Path,
    config: LearnerConfig | None = None,
) -> StepStats:
    """Load the model at `model_path`, take one step on `samples`, save to `out`.

    The samples are checked before the model is updated, and nothing is written
    unless the step succeeds. A fresh AdamW state each call: its first update is
    about lr·sign(gradient) per weight; a loop that keeps a `Learner` keeps the state.
    """
    learner = Learner(model_path, config)
    stats = learner.step(samples)
    learner.save(out)
    return stats


def _forwarded(family: Family, lengths: Sequence[int]) -> int:
    return lengths[family.root] + sum(lengths[i] - p for i, p in family.children)


def _width(samples: Sequence[Sample], batch: Sequence[Family]) -> int:
    from sprout.train.forward import members

    return max(len(samples[i].input_ids) for i in members(batch))


def _device(name: str) -> torch.device:
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise LearnerError(f"device {name!r}: expected auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise LearnerError(f"device {name}: no CUDA device here (torch {torch.__version__})")
    return device


def _autocast_dtype(dtype: str, device: torch.device) -> torch.dtype | None:
    import torch

    if dtype == "bf16":
        return torch.bfloat16
    if dtype == "auto" and device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return None


def _unshareable(config: Any) -> str | None:
    from sprout.train.forward import check_shareable

    return check_shareable(config)
