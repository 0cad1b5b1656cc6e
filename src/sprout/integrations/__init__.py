"""sprout inside the tools people already run: mini-swe-agent's agent configs (and, to
come, sprout as an environment of mini-swe-agent and of Harbor). Nothing of sprout's own
imports this package but the command line; it imports the tools' packages only where
their own code must run, and reads their files where reading is enough."""
