"""Rater ordering and classical MDS for the Collaboration panel.

The functions live in :mod:`kalos_core.dic.rater_map` (the DIC comparison uses them too);
this module re-exports them for the panels.
"""

from kalos_core.dic.rater_map import alpha_matrix, classical_mds, cluster_order, distances

__all__ = ["alpha_matrix", "classical_mds", "cluster_order", "distances"]
