"""Errors raised by the sandbox, each naming the argument or file that caused it."""

from sprout.workspace import WorkspaceError


class SandboxError(WorkspaceError):
    """Base class: the CLI maps these to exit code 2 with a one-line message; to the
    actor, a failed workspace (fault `sandbox`)."""


class BadArgument(SandboxError, ValueError):
    """An argument has the wrong type or value; the message names it (`input_name`) and says
    what fits."""

    def __init__(self, argument: str, problem: str) -> None:
        super().__init__(f"{argument}: {problem}", input_name=argument)


class UnknownCheckpoint(BadArgument, KeyError):
    """A checkpoint id that the store never sealed (or that GC already freed)."""

    def __init__(self, checkpoint_id: str, store: str) -> None:
        super().__init__("checkpoint_id", f"no sealed checkpoint {checkpoint_id!r} in {store}")
        self.checkpoint_id = checkpoint_id

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


class StoreModeMismatch(SandboxError):
    """A store written in one mode (root, rootless, copy) opened in another."""


class SandboxUnavailable(SandboxError):
    """The machine lacks what a backend needs (overlayfs, namespaces, a C compiler)."""


class SandboxSetupFailed(SandboxError):
    """The kernel refused a mount or namespace while preparing a call."""


class FlushFailed(SandboxError):
    """A sealed layer that could not be made durable: the flush that covered it (one syncfs
    of its store's filesystem) failed, so a crash of the machine may lose it; the run
    records no checkpoint of it (`LayerStore.wait_durable`)."""

    def __init__(self, store: str, layer_id: str, error: Exception) -> None:
        why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        super().__init__(f"{store}: checkpoint {layer_id} not flushed to disk: {why}")
