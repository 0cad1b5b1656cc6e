"""Model clients behind one protocol: `complete(messages, ...) -> Completion`."""

from sprout.models.types import (
    Choice,
    Completion,
    Message,
    Model,
    ModelError,
    TokenLogprob,
    ToolCall,
)

__all__ = [
    "Choice",
    "Completion",
    "Message",
    "Model",
    "ModelError",
    "TokenLogprob",
    "ToolCall",
]
