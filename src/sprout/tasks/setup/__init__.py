"""Checkpoint 0: the image each task stands on, its set-up steps, copies and users, built
into a base layer once per machine.
"""
