"""Consensus labels: one label per agreement unit that enough raters support, and a review queue.

>>> from kalos_core.consensus import compute_consensus, ConsensusConfig
>>> res = compute_consensus(dataset, config=ConsensusConfig(threshold=0.5, support=0.5))
"""

from .engine import (BOX_FUSIONS, ConsensusConfig, ConsensusLabel, ConsensusResult, ReviewItem, build_consensus,
                     compute_consensus, consensus_steps, needed_support)

__all__ = ["BOX_FUSIONS", "ConsensusConfig", "ConsensusLabel", "ConsensusResult", "ReviewItem", "build_consensus",
           "compute_consensus", "consensus_steps", "needed_support"]
