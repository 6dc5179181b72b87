"""What an import of the simulator's output skips: the product's default patterns and the simulator's manifest."""

from __future__ import annotations

from service.importer import ignore_patterns
from simulator import IMPORT_IGNORE, MANIFEST_FILE

SIMULATED = ignore_patterns(None, IMPORT_IGNORE)

__all__ = ["MANIFEST_FILE", "SIMULATED"]
