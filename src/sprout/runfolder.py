"""The run folder: `sprout.db`, `results.json`, `report.html` and `layers/`, opened together."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sprout.sandbox import LayerStore
from sprout.store import Store
from sprout.tree import RolloutTree


class RunFolderError(ValueError):
    """A path that is not a run folder, or an `ATTEMPT:k` that names nothing in it."""


@dataclass
class RunFolder:
    """One run's files; `open` reads an existing folder, `create` makes a new one."""

    path: Path
    store: Store
    layers: LayerStore

    @property
    def tree(self) -> RolloutTree:
        return RolloutTree(self.store)

    @classmethod
    def create(cls, path: str | Path) -> RunFolder:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        return cls(path, Store(path / "sprout.db"), LayerStore(path / "layers"))

    @classmethod
    def create_new(cls, path: str | Path) -> RunFolder:
        """A new run folder; one that already holds a run is refused, so nothing is mixed."""
        if (Path(path) / "sprout.db").exists():
            raise RunFolderError(
                f"{path}: already holds a run (sprout.db); pass --resume to continue it, "
                "or choose another --out"
            )
        return cls.create(path)

    @classmethod
    def open(cls, path: str | Path) -> RunFolder:
        path = Path(path)
        if not (path / "sprout.db").is_file() or not (path / "layers").is_dir():
            raise RunFolderError(f"{path}: not a run folder (needs sprout.db and layers/)")
        return cls(path, Store(path / "sprout.db"), LayerStore(path / "layers"))

    def close(self) -> None:
        self.store.close()


def parse_checkpoint_ref(text: str) -> tuple[int, int | None]:
    """`ATTEMPT:k` (or `ATTEMPT` for its last turn) as (attempt id, boundary)."""
    attempt, _, boundary = text.partition(":")
    try:
        return int(attempt), (int(boundary) if boundary else None)
    except ValueError:
        raise RunFolderError(
            f"{text!r}: expected ATTEMPT:k, e.g. 3:2 for attempt 3 after turn 2"
        ) from None
