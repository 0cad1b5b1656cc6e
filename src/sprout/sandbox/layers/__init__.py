"""The layer store: sealed, immutable layers on disk and everything kept beside them
(metadata, holds, named refs, the store's mode), how a layer marks deletions, and what
reads or rewrites layers (changes between checkpoints, squash, sharing between stores,
export, GC, the `host` image's view). The helpers take a `StoreView`, never the store's
private state. Its modules are imported directly; `sprout.sandbox` is the API."""
