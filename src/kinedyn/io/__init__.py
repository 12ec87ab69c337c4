"""Results files: CSV, NPZ and summary.json."""
from .results import Results

__all__ = ["Results"]
