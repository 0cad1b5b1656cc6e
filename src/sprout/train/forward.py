"""Per-token log-probabilities of one micro-batch, each shared prefix forwarded once (torch).

Position t of a row holds log p(token t | tokens before t) under the policy
(logits divided by the temperature); position 0 holds 0 (nothing predicts the
first token). Rows are the micro-batch's members: the families' roots, then
their children.

A child is forwarded from the end of its shared prefix only. Its queries
attend to the root's keys and values of the prefix (kept in the autograd
graph, so the backward pass goes through the prefix once, with the gradients
of the root's and all its children's losses summed: the same gradient as
forwarding every prefix again, for the price of one). Its first suffix token
is predicted by the root's logits at the prefix's last position, and its
prefix tokens have the root's log-probabilities (same tokens, same context).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from sprout.train.batching import Family

if TYPE_CHECKING:
    from sprout.train.samples import Sample


def members(batch: Sequence[Family]) -> list[int]:
    """Sample indices in row order: roots first, then every root's children."""
    return [f.root for f in batch] + [i for f in batch for i, _ in f.children]


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor, temperature: float) -> torch.Tensor:
    """log softmax(logits / temperature)[target], in fp32 whatever the compute dtype."""
    scaled = logits.float()
    if temperature != 1.0:
        scaled = scaled / temperature
    picked = scaled.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(scaled, dim=-1)


def pad_rows(rows: Sequence[Sequence[int]], value: int, device: torch.device) -> torch.Tensor:
    width = max(len(row) for row in rows)
    out = torch.full((len(rows), width), value, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out.to(device)


def per_token(
    samples: Sequence[Sample], rows: Sequence[int], field: str, width: int, device: torch.device
) -> torch.Tensor:
    """A per-token field of the samples (loss_mask, advantages, ...), zero-padded, fp32;
    None (a missing rollout log-prob) becomes NaN."""
    out = torch.zeros((len(rows), width), dtype=torch.float32)
    for i, index in enumerate(rows):
        values = getattr(samples[index], field)
        out[i, : len(values)] = torch.tensor(
            [float("nan") if v is None else float(v) for v in values]
        )
    return out.to(device)


def micro_batch_logprobs(
    model: Any,
    samples: Sequence[Sample],
    batch: Sequence[Family],
    *,
    temperature: float,
    pad_id: int,
    mask_dtype: torch.dtype,
) -> torch.Tensor:
    """[members, longest member] log-probabilities of the micro-batch (grad if enabled)."""
    device = next(model.parameters()).device
    roots = [samples[f.root].input_ids for f in batch]
    ids = pad_rows(roots, pad_id, device)
    attention = pad_rows([[1] * len(r) for r in roots], 0, device)
    kids = [(r, index, p) for r, f in enumerate(batch) for index, p in f.children]
    out = model(input_ids=ids, attention_mask=attention, use_cache=bool(kids))
    logits = out.logits
    root_lp = torch.zeros(ids.shape, dtype=torch.float32, device=device)
    root_lp[:, 1:] = token_logprobs(logits[:, :-1], ids[:, 1:], temperature)
    rows = [root_lp[r, : len(root)] for r, root in enumerate(roots)]
    if kids:
        cache = getattr(out, "cache", None)
        cache = out.past_key_values if cache is None else cache  # transformers 4.x
        rows += _children(
            model, samples, kids, cache, logits, root_lp, temperature, pad_id, mask_dtype
        )
    width = max(len(row) for row in rows)
    return torch.stack([torch.nn.functional.pad(row, (0, width - len(row))) for row in rows])


def _children(
    model: Any,
    samples: Sequence[Sample],
    kids: Sequence[tuple[int, int, int]],
    cache: Any,
    root_logits: torch.Tensor,
    root_lp: torch.Tensor,
    temperature: float,
    pad_id: int,
    mask_dtype: torch.dtype,
) -> list[torch.Tensor]:
    """Log-probability rows of the children, forwarding only what follows each prefix."""
    device = root_lp.device
    rows = torch.tensor([r for r, _, _ in kids], device=device)
    prefix = torch.tensor([p for _, _, p in kids], device=device)
    longest = int(prefix.max())
    suffixes = [samples[index].input_ids[p:] for _, index, p in kids]
    ids = pad_rows(suffixes, pad_id, device)
    width = ids.shape[1]
    positions = prefix.unsqueeze(1) + torch.arange(width, device=device)
    past = _sliced_cache(model, cache, rows, longest)
    mask = _child_mask(prefix, [len(s) for s in suffixes], longest, width, mask_dtype)
    out = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        use_cache=True,
        **{_cache_kwarg(model): past},
    )
    first = token_logprobs(root_logits[rows, prefix - 1], ids[:, 0], temperature)
    rest = token_logprobs(out.logits[:, :-1], ids[:, 1:], temperature)
    out_rows = []
    for c, (r, _, p) in enumerate(kids):
        s = len(suffixes[c])
        out_rows.append(torch.cat([root_lp[r, :p], first[c : c + 1], rest[c, : s - 1]]))
    return out_rows


def _child_mask(
    prefix: torch.Tensor, lengths: Sequence[int], longest: int, width: int, dtype: torch.dtype
) -> torch.Tensor:
    """Additive 4D mask [children, 1, suffix, cached prefix + suffix].

    Key j < `longest` is a cached position of the root: visible when j is inside
    this child's prefix (the root's tokens after it belong to another branch).
    Key `longest` + k is suffix token k: visible causally when it is not padding.
    Padded queries still see the prefix, so no row is fully masked.
    """
    device = prefix.device
    keys = torch.arange(longest, device=device)
    in_prefix = (keys.unsqueeze(0) < prefix.unsqueeze(1)).unsqueeze(1)  # [C, 1, P]
    q = torch.arange(width, device=device)
    causal = q.unsqueeze(1) >= q.unsqueeze(0)  # [S, S]
    real = q.unsqueeze(0) < torch.tensor(lengths, device=device).unsqueeze(1)  # [C, S]
    suffix = causal.unsqueeze(0) & real.unsqueeze(1)  # [C, S, S]
    allowed = torch.cat([in_prefix.expand(-1, width, -1), suffix], dim=2)
    additive = torch.zeros(allowed.shape, dtype=dtype, device=device)
    additive.masked_fill_(~allowed, torch.finfo(dtype).min)
    return additive.unsqueeze(1)


def _sliced_cache(model: Any, cache: Any, rows: torch.Tensor, length: int) -> Any:
    """A new cache holding, for each child, its root's keys and values up to `length`."""
    from transformers import DynamicCache

    try:
        out = DynamicCache(config=model.config)
    except TypeError:  # transformers 4.x
        out = DynamicCache()
    if hasattr(cache, "layers"):
        pairs = [(layer.keys, layer.values) for layer in cache.layers]
    else:  # transformers 4.x
        pairs = list(zip(cache.key_cache, cache.value_cache, strict=True))
    for layer, (keys, values) in enumerate(pairs):
        out.update(keys[rows, :, :length], values[rows, :, :length], layer)
    return out


def _cache_kwarg(model: Any) -> str:
    """transformers 5.x calls the cache argument `cache`; 4.x called it `past_key_values`."""
    parameters = inspect.signature(model.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def check_shareable(config: Any) -> str | None:
    """Why prefixes cannot be shared with this model (None when they can).

    Sharing slices the root's key/value cache, which only full-attention layers
    hold whole: sliding-window and recurrent layers keep something else.
    """
    kinds = set(getattr(config, "layer_types", None) or ["full_attention"])
    if kinds != {"full_attention"}:
        return f"layer types {sorted(kinds)}: prefix sharing needs full attention everywhere"
    if getattr(config, "use_sliding_window", False) and getattr(config, "sliding_window", None):
        return "a sliding attention window: prefix sharing needs full attention everywhere"
    return None
