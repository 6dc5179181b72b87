"""GPU Steward foundation: configuration, domain model, table contracts, errors and clock."""

__version__ = "0.1.0"
