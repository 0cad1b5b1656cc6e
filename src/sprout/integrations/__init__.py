"""sprout inside the tools people already run: mini-swe-agent's agent configs, its
trajectories, and sprout's sandbox as its environment and as Harbor's (`harbor.py`, which
imports Harbor: Python 3.12+).
Nothing of sprout's own imports this package but the command line; it imports the tools'
packages only where their own code must run, and reads their files where reading is
enough."""
