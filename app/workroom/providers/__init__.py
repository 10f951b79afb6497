"""providers layer (see docs/architecture.md)."""
