"""A tiny causal LM with a real tokenizer and chat template, made on the spot (no download).

For tests, benchmarks and `sprout train` dry runs: a byte-level BPE tokenizer
trained on a few kilobytes of shell and prose (so any text round-trips), the
ChatML template Qwen models use, and a randomly initialised Llama-style model
of about 100k parameters. It speaks gibberish; it trains like any other.
"""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""ChatML: every message closed by <|im_end|> and a newline, as Qwen's templates do."""

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

CORPUS = """\
You are a software engineer working in a Linux shell. Run one command per block.
```bash
ls -la && cat README.md && python3 -m pytest -q
sed -i 's/a - b/a + b/' src/calc.py
pip install --no-index ./vendor/lib && grep -rn "def " src | head
echo SPROUT_SUBMIT
```
exit code 0, 1, 2: 4 passed, 1 failed in 0.12s. Traceback (most recent call last):
  File "/app/src/calc.py", line 3, in add
AssertionError: assert 5 == -1
The quick brown fox jumps over the lazy dog. {}[]()<>=+-*/\\|;:'",.?!@#$%^&~`_
"""


def build_tiny_model(path: str | Path, *, vocab_size: int = 400, seed: int = 0) -> Path:
    """Write a tiny model folder (config, weights, tokenizer, chat template) to `path`."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator([CORPUS] * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(path)

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = fast.eos_token_id
    model.generation_config.pad_token_id = fast.pad_token_id
    model.save_pretrained(path)
    return path


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python -m sprout.train.tiny DIR  (writes a tiny random model to DIR)")
    print(build_tiny_model(sys.argv[1]))
