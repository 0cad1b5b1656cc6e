"""What a run records about itself beside its tree, typed: the settings `--resume` must
match, how the run was placed and isolated, and what it rebuilt or adopted.

`RunMeta` is read whole (`RolloutTree.meta`) and written a field at a time
(`RolloutTree.update_meta`, given a `RunMeta` holding only the fields to write). Each
field is one row of the database's `meta` table, its name and its JSON, as runs have
always stored them: a run folder of any version reads alike, and a row this version does
not know (a newer sprout's) is left alone.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class MetaRecord(BaseModel):
    """A record of the run's meta. Keys this version does not name are kept, and a record is
    written back with exactly the keys it was read or made with (`to_json`)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    def to_json(self) -> dict[str, Any]:
        """The record as stored: the keys it was made with, none added."""
        return self.model_dump(mode="json", exclude_unset=True)


class Concurrency(MetaRecord):
    """How many sandboxes the run kept alive at once, why, and the most that ran at once over
    the whole run (a resumed run's earlier peak included)."""

    workers: int
    basis: str = ""
    """Why that many: `--workers N`, or what the machine's (or cluster's) room allowed."""
    peak: int = 0


class Placement(MetaRecord):
    """One entry of a `--ray` run's placement log: where a task's sandboxes went, and why."""

    task: str
    node: str
    store: str
    """The node's layer store: where the task's checkpoints are."""
    since: float = 0.0
    """When (epoch seconds)."""
    why: str = ""
    """`placed`, or the node that died before."""
    cpus: float | None = None
    memory: int | None = None
    """What the task's actor reserved there (bytes)."""


class RayPlacements(MetaRecord):
    """A run whose sandboxes ran on a Ray cluster: its address, and its placement log,
    oldest first (a resumed run's checkpoints are found through it)."""

    address: str
    placements: list[Placement] = Field(default_factory=list)


class TokenizerFingerprint(MetaRecord):
    """Which tokenizer made the run's token ids (`sprout.models.fingerprint`), so that no one
    trains on ids another one made. A local tokenizer records its hashes; a server records
    what it shows (vLLM: its probe's ids; llama.cpp: its template and model file)."""

    model: str | None = None
    sha256: str | None = None
    """The hash of the vocabulary, merges, chat template and EOS id."""
    probe_sha256: str | None = None
    """The hash of the probe conversation's ids: what a server that hides its tokenizer shows."""
    eos_token_id: int | None = None
    vocab_size: int | None = None
    server: str | None = None
    base_url: str | None = None


class RebuiltCheckpoint(MetaRecord):
    """A checkpoint lost with its node and rebuilt by replaying its attempt's calls."""

    attempt: int
    checkpoint: str
    calls: int
    """How many calls were replayed."""
    differed: int
    """How many of them printed otherwise than when they were played."""
    diverged: str | None = None
    """Where the rebuilt filesystem went its own way, when it did."""
    at: float = 0.0


class ImportedAttempt(MetaRecord):
    """An attempt adopted from a trajectory file played elsewhere."""

    attempt: int
    task: str
    source: str
    """The file it came from."""


class RunMeta(BaseModel):
    """Everything a run records about itself beside its tree; a field is None (or empty)
    until someone records it. Rows of the `meta` table with other names are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    settings: dict[str, Any] | None = None
    """`sprout run`'s settings (`RunSettings.to_json`): a `--resume` must ask for the same."""
    train: dict[str, Any] | None = None
    """`sprout train`'s settings: a resumed training run must ask for the same."""
    isolation: dict[str, Any] | None = None
    """What the machine gave the sandboxes (`IsolationReport.to_json`), for results.json."""
    task_warnings: dict[str, list[str]] | None = None
    """Per task, what its loader guessed (a Dockerfile line it skipped, say)."""
    images: dict[str, dict[str, Any]] | None = None
    """Per task, its image as the run chose it: how, and which digest."""
    concurrency: Concurrency | None = None
    ray: RayPlacements | None = None
    tokenizer: TokenizerFingerprint | None = None
    rebuilt: list[RebuiltCheckpoint] = Field(default_factory=list)
    """Every checkpoint the run rebuilt, in order."""
    imported: list[ImportedAttempt] = Field(default_factory=list)
    """Every attempt the run adopted, in order."""

    def tokenizer_json(self) -> dict[str, Any] | None:
        """The tokenizer's fingerprint as recorded (what `sprout.models.fingerprint` compares
        and exports carry); None when the run recorded none."""
        return None if self.tokenizer is None else self.tokenizer.to_json()

    def rows(self) -> dict[str, Any]:
        """The fields this meta was made with, as the `meta` table stores them (name, JSON)."""
        return self.model_dump(mode="json", exclude_unset=True)
