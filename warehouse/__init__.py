"""The DuckDB warehouse: the only package that runs SQL."""

from warehouse.store import IngestResult, Warehouse, open_warehouse

__all__ = ["IngestResult", "Warehouse", "open_warehouse"]
