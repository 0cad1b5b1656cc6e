"""A layer store's `store.json`: its format version, its mode and, as root, its id range.

Written once, when the store is made, and checked each time it is opened: layers written
in one mode (as root through a user namespace, rootless, or by the copy backend) hold
owners and markers that only that mode reads right, so a store is never opened in another.
"""

from __future__ import annotations

import json
import os
from typing import cast

from sprout.durable import write_atomically
from sprout.sandbox.errors import StoreModeMismatch
from sprout.sandbox.jail.idmap import IdRange, check_unclaimed, configured_range
from sprout.sandbox.jail.modes import MODES, StoreMode, current_user_mode, default_mode

STORE_FORMAT = 2
"""2: sandboxes of root stores run in a user namespace, and their layers hold mapped ids."""


def open_store_format(
    meta_path: str, requested: StoreMode | None
) -> tuple[StoreMode, IdRange | None]:
    """The mode of the store whose `store.json` is `meta_path`, and the host ids its
    sandboxes map to (root stores only), writing the file for a new store (`requested`, or
    the best mode this machine gives); StoreModeMismatch when this process cannot use it."""
    if not os.path.exists(meta_path):
        return _create(meta_path, requested)
    with open(meta_path, encoding="utf-8") as handle:
        data = json.load(handle)
    stored = data.get("mode")
    if data.get("format") not in (1, STORE_FORMAT) or stored not in MODES:
        raise StoreModeMismatch(f"{meta_path}: unknown store format {data!r}")
    if stored == "root" and data.get("format") == 1:
        raise StoreModeMismatch(
            f"{meta_path}: written by a sprout whose sandboxes ran as host root (store "
            "format 1); its layers hold host-owned files that today's user-namespace "
            "sandboxes cannot use: remove the store (or the run folder) and run again"
        )
    ids = IdRange.parse(str(data.get("ids")), f"{meta_path}: ids") if stored == "root" else None
    if requested is not None and requested != stored:
        raise StoreModeMismatch(
            f"{meta_path}: store was written in {stored} mode, cannot open it in {requested} mode"
        )
    if stored != "copy" and stored != current_user_mode():
        raise StoreModeMismatch(
            f"{meta_path}: store was written in {stored} mode but this process is "
            f"{'root' if os.geteuid() == 0 else 'not root'}; open it as the user that made it"
        )
    return cast(StoreMode, stored), ids


def _create(meta_path: str, requested: StoreMode | None) -> tuple[StoreMode, IdRange | None]:
    """A new store's `store.json`; as root, it claims the configured id range (read, and
    so checked, in every mode: a malformed SPROUT_ID_RANGE is never silently unused)."""
    if requested is None:
        requested = default_mode()
    meta: dict[str, object] = {"format": STORE_FORMAT, "mode": requested}
    configured = configured_range()
    ids = None
    if requested == "root":
        ids = configured
        check_unclaimed(ids)
        meta["ids"] = str(ids)
    write_atomically(meta_path, json.dumps(meta), True)
    return requested, ids
