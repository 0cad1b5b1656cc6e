"""The layer store: sealed, immutable layers on disk and everything kept beside them
(metadata, holds, named refs, the store's mode), how a layer marks deletions, and what
reads or rewrites layers (changes between checkpoints, squash, sharing between stores,
export, GC, the `host` image's view). The helpers that take the store back get its
`layer_files.LayerFiles`, the class `LayerStore` builds on, never the store above it. Its
modules are imported directly; `sprout.sandbox` is the API."""
