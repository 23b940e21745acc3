"""Rater scorecards: precision, recall, F1, localisation error, class confusion and misses / extras
by object size of each rater against a reference (an expert, or the other raters' majority).

>>> from kalos_core.scorecard import compute_scorecards, ScorecardConfig
>>> compute_scorecards(dataset, ScorecardConfig(reference="expert")).row("alice")["f1"]
"""

from .engine import COLUMNS, SIZE_BUCKETS, ScorecardConfig, ScorecardResult, compute_scorecards, scorecard_steps

__all__ = ["COLUMNS", "SIZE_BUCKETS", "ScorecardConfig", "ScorecardResult", "compute_scorecards", "scorecard_steps"]
