"""Orchestration above search and train: jobs that play rollouts and then learn from them.

`training` is `sprout train`'s loop (rollouts with the training schedule, samples,
one learner step, repeated). It sits above both `sprout.search` and `sprout.train`
so that neither leaf reaches the other: train never runs a sandbox.
"""
