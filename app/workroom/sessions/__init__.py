"""sessions layer (see docs/architecture.md)."""
