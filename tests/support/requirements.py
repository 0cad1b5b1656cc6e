"""What a test needs of this machine, asked before it starts: each function returns when the
machine has it, and skips the test, naming what is missing, when it does not.

The overlay sandbox is the exception to skipping: under SPROUT_REQUIRE_SANDBOX=1 (set by
`make test` on a machine that can run it) a test that would skip for want of it fails
instead, since there the skip would hide a broken sandbox.
"""

from __future__ import annotations

import os

import pytest

from sprout.sandbox.jail.modes import overlay_unavailable_reason


def require_overlay() -> None:
    """Skip (or, under SPROUT_REQUIRE_SANDBOX=1, fail) when the overlay backend cannot run."""
    reason = overlay_unavailable_reason()
    if reason is None:
        return
    if os.environ.get("SPROUT_REQUIRE_SANDBOX") == "1":
        pytest.fail(f"SPROUT_REQUIRE_SANDBOX=1 but the overlay sandbox cannot run: {reason}")
    pytest.skip(f"overlay sandbox unavailable: {reason}")


def require_host_image() -> None:
    """The `host` image is an overlay of this machine's root, which only root can mount."""
    require_overlay()
    if os.geteuid() != 0:
        pytest.skip("the host image needs root; test_rootless.py covers unprivileged users")


def require_train_extra() -> None:
    """Skip unless torch and transformers import (``pip install sprout-rl[train]``)."""
    for module in ("torch", "transformers"):
        pytest.importorskip(module, reason=f"{module} is not installed (the train extra)")
