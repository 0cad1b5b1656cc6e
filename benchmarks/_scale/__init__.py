"""The scale benchmark's sections (benchmarks/scale.py is the command): tail, sweep, runner,
idle, with what they count on the host (host), their report and chart."""
