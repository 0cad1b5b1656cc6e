"""Holds (`h/ID` in a layer store): which process is writing each unsealed layer.

A hold names its owner by pid and start time, so a pid reused by another process does
not keep a dead owner's layer alive: what a dead owner held is debris to sweep, and
nothing of a live process is ever swept. A hold also names the layer's parent, which a
live sandbox's writes stack on and GC must keep.
"""

from __future__ import annotations

import json
import os

from sprout.durable import write_atomically
from sprout.sandbox.jail.processes import own_start, process_start


def write_hold(hold_dir: str, layer_id: str, parent: str | None) -> None:
    """Record that this process writes unsealed layer `layer_id` on top of `parent`."""
    hold = {"pid": os.getpid(), "start": own_start(), "parent": parent}
    write_atomically(os.path.join(hold_dir, layer_id), json.dumps(hold), False)


def read_holds(hold_dir: str) -> tuple[dict[str, str | None], list[str]]:
    """Holds of live processes (layer id -> parent), and the layers of dead ones."""
    live: dict[str, str | None] = {}
    dead: list[str] = []
    for name in os.listdir(hold_dir):
        if name.endswith(".tmp"):
            continue
        try:
            with open(os.path.join(hold_dir, name), encoding="utf-8") as handle:
                hold = json.load(handle)
        except (OSError, ValueError):
            continue
        running = hold.get("start") is not None
        if running and process_start(hold["pid"]) == hold["start"]:
            live[name] = hold.get("parent")
        else:
            dead.append(name)
    return live, dead
