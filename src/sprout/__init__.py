"""sprout-rl: checkpoint every turn of a coding agent, branch from the turn before the mistake."""

__version__ = "0.1.0"
