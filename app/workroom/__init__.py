"""Workroom companion: keeps remote workrooms honest about sleep."""

__version__ = "0.1.0"
