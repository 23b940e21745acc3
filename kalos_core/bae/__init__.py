"""Behaviour Alignment Explainability (BAE): a model's per-rater representations against the
raters' pairwise agreement (the ``multi_annotator_tendency_dic_bae`` paper, Eq. 7).

>>> from kalos_core.bae import compute_bae, BAEConfig
>>> compute_bae(dataset, {"r1": [0.1, 0.9], "r2": [0.2, 0.8]}, BAEConfig(threshold=0.5)).bae
"""

from .engine import BAEConfig, BAEResult, bae_steps, compare, compute_bae, cosine_matrix, rater_vectors

__all__ = ["BAEConfig", "BAEResult", "bae_steps", "compare", "compute_bae", "cosine_matrix", "rater_vectors"]
