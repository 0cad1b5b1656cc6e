"""The `sprout` subcommands: each parses its options and calls the modules that do the work."""
