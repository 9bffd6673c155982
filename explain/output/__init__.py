"""The two reports as a table for people and as JSON for scripts (schema: docs/explain.md).
Pure; imports the verdicts and the facts they carry."""
