"""The reference path of :func:`kalos_core.agreement.compute_agreement` (tests only).

One ``alpha`` call per image and per diagnostic subset, exactly as the method reads
(docs/method.md §4, §6). :mod:`kalos_core.agreement` computes the same numbers in batches;
``tests/core/test_agreement_paths.py`` holds the two to each other.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from kalos_core.agreement.pipeline import AgreementConfig, AgreementResult, _result_warnings, bootstrap_mean_ci
from kalos_core.data import MultiRaterDataset
from kalos_core.agreement.model_rater import compare_models
from kalos_core.matching import get_cost, get_solver
from kalos_core.matching.costs import CostFn
from kalos_core.matching.solvers import SolverFn
from kalos_core.agreement.problem import ImageProblem, empty_image_cells, prepare_image
from kalos_core.reliability import NO_OBJECT, Cells, alpha, unit_status


def _mean_of(lists: dict) -> dict:
    return {k: float(np.mean(v)) for k, v in sorted(lists.items()) if len(v)}


def _nested(pairs: dict[tuple[str, str], float], rows: list[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {r: {} for r in rows}
    for (p, q), v in pairs.items():
        out[p][q] = v
        out[q][p] = v
    for r in rows:
        out[r][r] = 1.0
    return {r: dict(sorted(v.items())) for r, v in out.items()}


def class_alphas(cells: Cells) -> dict[int, float]:
    """α of the units in which any rater used class ``c``, for every class present."""
    out = {}
    classes = np.unique(cells.value[cells.value != NO_OBJECT])
    for c in classes.tolist():
        hit = np.zeros(cells.n_units, bool)
        hit[cells.unit[cells.value == c]] = True
        out[int(c)] = alpha(cells.select_units(hit))
    return out


def vitality(ip: ImageProblem, image_alpha: float, threshold: float,
             solver: SolverFn, cost: CostFn) -> dict[str, float]:
    """``V_r = α_R - α_{R without r}`` for each row; needs at least three rows."""
    out: dict[str, float] = {}
    if ip.n_rows < 3:
        return out
    for r, name in enumerate(ip.rows):
        rows = np.array([k for k in range(ip.n_rows) if k != r])
        keep = ip.problem.rater != r
        units, cells = ip.match(threshold, solver, cost, keep=keep, rows=rows)
        out[name] = image_alpha - alpha(cells)
    return out


def pairwise(ip: ImageProblem, threshold: float, solver: SolverFn,
             cost: CostFn) -> dict[tuple[str, str], tuple[float, Cells]]:
    """α of every pair of rows computed on the two raters alone, with their cells.

    An image where the pair has no unit contributes one virtual NO_OBJECT unit
    to the global pairwise matrix, as in the global α.
    """
    out = {}
    for p, q in combinations(range(ip.n_rows), 2):
        keep = (ip.problem.rater == p) | (ip.problem.rater == q)
        units, cells = ip.match(threshold, solver, cost, keep=keep, rows=np.array([p, q]))
        if cells.n_units == 0:
            cells = empty_image_cells(2)
        out[(ip.rows[p], ip.rows[q])] = (alpha(cells), cells)
    return out


def intra_rater(ip: ImageProblem, threshold: float, solver: SolverFn,
                cost: CostFn) -> dict[str, float]:
    """α among the sessions of each rater who labelled this image more than once."""
    groups: dict[str, list[int]] = {}
    for k, row in enumerate(ip.rows):
        groups.setdefault(ip.image.base_rater(row), []).append(k)
    out = {}
    for rater, rows in groups.items():
        if len(rows) < 2:
            continue
        keep = np.isin(ip.problem.rater, rows)
        _, cells = ip.match(threshold, solver, cost, keep=keep, rows=np.array(rows))
        out[rater] = alpha(cells)
    return out


def localisation_sensitivity(ip: ImageProblem, thresholds, solver: SolverFn,
                             cost: CostFn) -> dict[float, float]:
    """The image's α at each similarity threshold."""
    return {float(t): alpha(ip.match(float(t), solver, cost)[1]) for t in thresholds}


@dataclass
class ImageOutcome:
    """Everything one image contributes (small and picklable, for worker processes)."""

    image_id: Any
    alpha: float
    rows: tuple
    ann_ids: list
    ann_raters: list
    units: list
    status: list
    cells: Cells
    class_alphas: dict = field(default_factory=dict)
    vitality: dict = field(default_factory=dict)
    pairwise: dict = field(default_factory=dict)
    lsa: dict = field(default_factory=dict)
    intra: dict = field(default_factory=dict)


def analyse_image(image, kind: str, config: AgreementConfig) -> ImageOutcome:
    """Match one image, compute its α and every per-image diagnostic."""
    spec = config.distance_spec(kind)
    plain = get_solver(config.solver)
    solver, cost = (lambda p, t, c: plain(p, t, c)), get_cost(config.cost)  # no sorted-pairs shortcut
    thr = config.threshold
    ip = prepare_image(image, spec, min((thr, *config.lsa_thresholds)))
    units, cells = ip.match(thr, solver, cost)
    a = alpha(cells)
    out = ImageOutcome(image.id, a, ip.rows, [x.id for x in ip.annotations], [x.rater for x in ip.annotations],
                       units.tolist(), unit_status(units, ip.problem.category).tolist(),
                       cells if cells.n_units else empty_image_cells(ip.n_rows))
    if config.class_difficulty:
        out.class_alphas = class_alphas(cells)
    if config.vitality:
        out.vitality = vitality(ip, a, thr, solver, cost)
    if config.collaboration:
        out.pairwise = pairwise(ip, thr, solver, cost)
    if config.lsa_thresholds:
        out.lsa = localisation_sensitivity(ip, config.lsa_thresholds, solver, cost)
    if config.intra_rater:
        out.intra = intra_rater(ip, thr, solver, cost)
    return out


_POOL_DATA: tuple | None = None  # (dataset, config), inherited by forked workers


def _analyse_index(k: int) -> ImageOutcome:
    dataset, config = _POOL_DATA
    return analyse_image(dataset.images[k], dataset.kind, config)


def _outcomes(dataset: MultiRaterDataset, config: AgreementConfig, workers: int):
    """Per-image outcomes in image order, from this process or a pool of forked workers."""
    global _POOL_DATA
    n = len(dataset.images)
    if workers <= 1 or n < 64 or "fork" not in mp.get_all_start_methods():
        for image in dataset.images:
            yield analyse_image(image, dataset.kind, config)
        return
    _POOL_DATA = (dataset, config)
    try:
        with mp.get_context("fork").Pool(workers) as pool:
            yield from pool.imap(_analyse_index, range(n), chunksize=max(1, min(64, n // (8 * workers))))
    finally:
        _POOL_DATA = None


def reference_agreement(dataset: MultiRaterDataset, config: AgreementConfig = AgreementConfig(),
                    workers: int = 1) -> AgreementResult:
    """:func:`kalos_core.agreement.compute_agreement`, one ``alpha`` call per image and subset."""
    config.check_dataset(dataset)
    spec = config.distance_spec(dataset.kind)
    workers = (os.cpu_count() or 1) if workers == 0 else workers
    all_rows = dataset.raters
    row_id = {r: k for k, r in enumerate(all_rows)}
    names = dataset.categories

    per_image: dict[str, float] = {}
    unit_of, status_of = {}, {}
    global_parts, global_maps = [], []
    vit, cls_mean = defaultdict(list), defaultdict(list)
    vit_img, cls_img = defaultdict(dict), defaultdict(lambda: defaultdict(list))
    pair_mean, pair_cells = defaultdict(list), defaultdict(list)
    lsa_lists, intra = defaultdict(list), defaultdict(list)
    counts = defaultdict(lambda: defaultdict(int))
    n_units = single = 0
    total = len(dataset.images)

    for k, out in enumerate(_outcomes(dataset, config, workers)):
        per_image[str(out.image_id)] = out.alpha
        single += len(out.rows) < 2
        n_units += len(set(out.units))
        for aid, rater, u, s in zip(out.ann_ids, out.ann_raters, out.units, out.status):
            unit_of[aid] = f"{out.image_id}:{u}"
            status_of[aid] = s
            counts[rater]["annotations"] += 1
            counts[rater][s] += 1
        global_parts.append(out.cells)
        global_maps.append(np.array([row_id[r] for r in out.rows], dtype=np.int64))
        for c, v in out.class_alphas.items():
            cls_mean[names.get(c, str(c))].append(v)
            cls_img[names.get(c, str(c))][str(out.image_id)].append(v)
        for r, v in out.vitality.items():
            vit[r].append(v)
            vit_img[r][str(out.image_id)] = v
        for pair, (v, pc) in out.pairwise.items():
            pair_mean[pair].append(v)
            pair_cells[pair].append(pc)
        for t, v in out.lsa.items():
            lsa_lists[t].append(v)
        for r, v in out.intra.items():
            intra[r].append(v)

    alphas = np.array(list(per_image.values()))
    global_cells = Cells.concat(global_parts, global_maps)
    g = alpha(global_cells)
    result = AgreementResult(
        mean_alpha=float(alphas.mean()) if len(alphas) else float("nan"),
        global_alpha=g,
        mean_alpha_ci=bootstrap_mean_ci(alphas, config.bootstrap, config.confidence, config.seed),
        per_image_alpha=per_image,
        n_images=total,
        n_annotations=dataset.n_annotations,
        n_units=n_units,
        config={**asdict(config), "distance": spec.name, "kind": dataset.kind},
        unit_of=unit_of,
        status_of=status_of,
        n_skipped=len(dataset.skipped),
        skipped=list(dataset.skipped),
        n_single_rater_images=int(single),
        warnings=_result_warnings(dataset, int(single), config),
    )
    result.models = list(dataset.meta.get("models", []))
    result.rater_summary = {r: {**{k: float(v) for k, v in c.items()}} for r, c in sorted(counts.items())}
    if config.vitality:
        result.vitality = _mean_of(vit)
        result.vitality_images = {r: dict(v) for r, v in sorted(vit_img.items())}
        for r, idx in row_id.items():
            keep = np.ones(len(all_rows), bool)
            keep[idx] = False
            if len(all_rows) >= 3:
                result.vitality_global[r] = g - alpha(global_cells.select_rows(keep))
    if config.class_difficulty:
        result.class_difficulty = _mean_of(cls_mean)
        result.class_difficulty_images = {c: {i: float(np.mean(v)) for i, v in per.items()}
                                          for c, per in sorted(cls_img.items())}
        result.class_difficulty_global = {
            names.get(c, str(c)): v for c, v in sorted(class_alphas(global_cells).items())
        }
    if config.collaboration:
        result.collaboration = _nested(_mean_of(pair_mean), all_rows)
        shared = _nested({p: len(v) for p, v in pair_mean.items()}, all_rows)
        result.collaboration_n = {r: {q: n for q, n in row.items() if q != r} for r, row in shared.items()}
        result.collaboration_global = _nested(
            {p: alpha(Cells.concat(cs)) for p, cs in pair_cells.items()}, all_rows)
    if config.lsa_thresholds:
        result.lsa = {f"{t:g}": float(np.mean(v)) for t, v in sorted(lsa_lists.items())}
        strict = max(lsa_lists)
        result.lsa_delta = result.mean_alpha - float(np.mean(lsa_lists[strict]))
    if config.intra_rater:
        result.intra_rater = _mean_of(intra)
    result.model_comparison = compare_models(result)
    return result
