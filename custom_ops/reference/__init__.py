"""The golden reference of SPEC §1.5: float64 scores, exact selection order."""
from .indexer import golden_indexer, golden_scores, topk_rows  # noqa: F401
