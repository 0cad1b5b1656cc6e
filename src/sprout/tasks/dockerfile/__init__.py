"""A task's Dockerfile: read as Docker reads it, and translated into the steps, copies
and settings of its checkpoint 0.
"""
