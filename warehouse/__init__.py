"""The DuckDB warehouse: the only package that runs SQL."""

from warehouse.quarantine import Quarantined
from warehouse.store import FileSignature, IngestResult, SpoolBatchId, Warehouse, open_warehouse

__all__ = ["FileSignature", "IngestResult", "Quarantined", "SpoolBatchId", "Warehouse", "open_warehouse"]
