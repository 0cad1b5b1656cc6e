"""Training: GRPO groups over roots and branches, token-exact samples, tree credit, the learner.

Only the learner and the local model touch torch, and they import it lazily:
`import sprout.train` works without the `train` extra.
"""
