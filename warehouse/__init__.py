"""The DuckDB warehouse: the only package that runs SQL."""

from warehouse.quarantine import Quarantined
from warehouse.store import FileSignature, IngestResult, Warehouse, open_warehouse

__all__ = ["FileSignature", "IngestResult", "Quarantined", "Warehouse", "open_warehouse"]
