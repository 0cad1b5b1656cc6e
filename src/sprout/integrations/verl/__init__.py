"""sprout inside verl: the `sprout` agent loop (docs/integrations.md)."""
