"""Multi-annotator tendency: DIC between two rater x rater agreement matrices, BAE, and the
rater map (MDS of 1 - α, clusters) behind them.

>>> from kalos_core.dic import compare_runs
>>> compare_runs(first_collaboration, second_collaboration)["dic"]
"""

from .engine import DICConfig, DICResult, bae, clusters, compare_runs, frobenius_dic, procrustes_align
from .rater_map import alpha_matrix, classical_mds, cluster_order, distances

__all__ = ["DICConfig", "DICResult", "alpha_matrix", "bae", "classical_mds", "cluster_order", "clusters",
           "compare_runs", "distances", "frobenius_dic", "procrustes_align"]
