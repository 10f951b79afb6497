"""remote layer (see docs/architecture.md)."""
