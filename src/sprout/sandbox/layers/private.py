"""A sealed layer's private files (`p/ID/` in a layer store): kept with the layer, never
mounted.

What a checkpoint's builder must keep for later, out of every sandbox over it: the git
history cut from a task's checkpoint 0, which only the verifier's throw-away fork gets
back. No sandbox mounts `p/` (a stack mounts `l/ID` folders only, and the `host` image
hides the store), so a hostile root inside reads none of it. The files live exactly as
long as their layer: freeing the layer removes them (`LayerFiles._remove_files`, also for
a layer swept half-freed), a store that adopts the layer links them as it links the
layer's files (`share.adopt`), and a layer shipped to another node carries them
(`take_shipped_layer`).
"""

from __future__ import annotations

import os

from sprout.durable import fsync_directory
from sprout.sandbox.errors import BadArgument
from sprout.sandbox.layers.layer_files import LayerFiles, private_dir, remove_private
from sprout.sandbox.layers.refs import ref_name


def keep_private(store: LayerFiles, layer_id: str, name: str, data: bytes) -> None:
    """Keep `data` as private file `name` of sealed layer `layer_id` (readable by the store's
    owner only); BadArgument for a layer that is not sealed or was adopted from another
    store, whose files are that store's."""
    store.layer(layer_id)  # UnknownCheckpoint when it is not sealed here
    files = os.path.realpath(store.diff_dir(layer_id))  # l/ID may link to s/ID/u, here
    if not files.startswith(os.path.realpath(store.path) + os.sep):
        raise BadArgument("layer_id", f"{layer_id}: adopted from another store, not this one's")
    folder = private_dir(store.path, layer_id)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = os.path.join(folder, ref_name(name))
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as handle:
        handle.write(data)
        if store.durable:
            handle.flush()
            os.fsync(handle.fileno())
    os.replace(temporary, path)
    if store.durable:
        fsync_directory(folder)


def private_file(store: LayerFiles, layer_id: str, name: str) -> str | None:
    """The host path of private file `name` of layer `layer_id`, None when it has none."""
    path = os.path.join(private_dir(store.path, layer_id), ref_name(name))
    return path if os.path.isfile(path) else None


def link_private(store: LayerFiles, source: LayerFiles, layer_id: str) -> None:
    """Link the private files of `source`'s layer `layer_id` into `store` (adopting it)."""
    found = private_dir(source.path, layer_id)
    link = private_dir(store.path, layer_id)
    if os.path.isdir(found) and not os.path.lexists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.realpath(found), link)


def take_private(store: LayerFiles, layer_id: str, files: str) -> None:
    """Make folder `files` (on `store`'s filesystem, moved into place) layer `layer_id`'s
    private files: what a layer shipped from another node brings."""
    link = private_dir(store.path, layer_id)
    os.makedirs(os.path.dirname(link), exist_ok=True)
    remove_private(store.path, layer_id)
    os.rename(files, link)
