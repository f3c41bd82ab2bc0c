"""Layer 0, records and rules: what a run writes and reads (schema, records, run folder,
transcripts, export), the rules every layer shares (config and its key roles, stats,
metrics, redaction, markup, interrupts, answers) and the registry that finds parts by name.
Nothing here imports from the layers above."""
