"""The sections of `sprout bench sandbox` (benchmarks/sandbox.py), one module each.

A private package, like _stats.py: `sprout bench` lists and runs benchmarks/*.py, and
this is what one of them is made of. `passes` runs the sections in their order; each
section measures, adds its figures to `Context.results` and its lines to `Context.rows`.
"""
