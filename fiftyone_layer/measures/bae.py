"""The FiftyOne side of BAE, and its Python entries: Behaviour Alignment Explainability
(:mod:`kalos_core.bae`) of a model's per-rater representations against the raters' pairwise α.

::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.bae import bae_run
    result = bae_run(dataset, rater_fields=["raters_a", "raters_b"], embedding_attribute="embedding")

The representations are vectors on the rater labels, in the label attribute
``embedding_attribute`` (a model's representation of that rater's labelling, e.g. written by an
annotator-aware model, or FiftyOne's ``compute_patch_embeddings(..., embeddings_field=...)``).
A rater's representation on a sample is the mean of its labels' vectors there; the rater's
``F_i`` the mean over its samples (the paper's Eq. 5). The run (``config.method ==
"kalos_bae"``) stores ``BAEResult.to_dict()``; it writes nothing on the labels.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from kalos_core.bae import BAEResult
from kalos_core.columns import ids_and_raters
from kalos_core.geometry import distances_for
from kalos_core.measure import MeasureData
from kalos_core.params import Config, param

from ..adapter import SetupError, read_dataset
from ..measure_runs import MeasureRun, measure_run, measure_steps
from ..registry import Offered

DEFAULT_KEY = "bae"
DEFAULT_ATTRIBUTE = "embedding"


@dataclass(frozen=True)
class Inputs(Config):
    """The plugin-only input of a BAE run."""

    embedding_attribute: str = param(
        DEFAULT_ATTRIBUTE, "str", "the rater labels' attribute holding a model's vector for that label "
        "(averaged per rater)", label="Embedding attribute", flag="")


def attribute_of(extras: dict) -> str:
    """The label attribute holding the vectors (default ``embedding``)."""
    return extras.get("embedding_attribute") or DEFAULT_ATTRIBUTE


def _check(collection, source, config, extras) -> None:
    if config.distance is not None and config.distance not in distances_for(source.kind):
        raise SetupError(f"{config.distance!r} is not a {source.kind} distance; choose among "
                         f"{', '.join(distances_for(source.kind))}", "distance")
    attr = attribute_of(extras)
    if not isinstance(attr, str) or not sum(collection.count(p) for p in source.label_paths(attr)):
        raise SetupError(f"no rater label carries a vector in the attribute {attr!r}", "embedding_attribute")


def _read(collection, source, config, extras) -> MeasureData:
    """The raters' labels, and each rater's per-sample mean vector (``options["embeddings"]``)."""
    data = read_dataset(collection, source)
    vectors, attr = {}, attribute_of(extras)
    for f in source.fields:
        ids, values = collection.values([f"{f}.{source.list_name}.id", f"{f}.{source.list_name}.{attr}"])
        for row_ids, row_values in zip(ids, values):
            vectors.update((str(i), v) for i, v in zip(row_ids or [], row_values or []) if v is not None)
    embeddings = defaultdict(list)
    try:
        for image in data.images:
            per_rater = defaultdict(list)
            for lid, row in zip(*ids_and_raters(image.annotations)):
                if str(lid) in vectors:
                    per_rater[image.base_rater(row)].append(np.asarray(vectors[str(lid)], dtype=float))
            for rater, vs in per_rater.items():
                embeddings[rater].append(np.mean(vs, axis=0))
    except (TypeError, ValueError) as e:
        raise SetupError(f"the label vectors in {attr!r} are not numbers of one length: {e}",
                         "embedding_attribute") from None
    return MeasureData(data, options={"embeddings": dict(embeddings)})


def _card(res: BAEResult, key: str) -> tuple:
    return "KaLOS: behaviour alignment (BAE)", [
        ("BAE (1 = the model reproduces the pairwise α)", res.bae), ("Raters compared", ", ".join(res.raters)),
        ("Left out (labels or vectors only)", ", ".join(res.only_labels + res.only_embeddings) or "none")], \
        "Open the panel 'KaLOS: Behaviour alignment'."


RUN = MeasureRun(
    "bae", "behaviour alignment (BAE)", DEFAULT_KEY, ("box", "polygon", "keypoints"),
    owned_paths=lambda source, run_key: [], read=_read, check=_check, inputs=Inputs, config_key="bae_config",
    app=Offered(
        "KaLOS behaviour alignment (BAE)", "compute_bae", "KaLOS: behaviour alignment (BAE)",
        "How well a model's per-rater representations (vectors on the rater labels) reproduce the raters' "
        "pairwise α: BAE = 1 − ‖S_model − S_true‖ / ‖S_true‖",
        key_help="stored as a custom run; nothing is written on the labels", panels=("bae:BAEPanel",),
        card=_card, notice=lambda res, key: f"KaLOS BAE {key!r}: {res.bae:.4f} over {len(res.raters)} raters"))


def bae_steps(collection, **params):
    """:func:`bae_run` as a generator of ``(fraction, message)`` steps; returns the result."""
    return measure_steps(RUN, collection, **params)


def bae_run(collection, progress=None, **params) -> BAEResult:
    """BAE on ``collection`` stored under ``run_key``: the rater source (``rater_fields`` or
    ``label_field`` + ``rater_attribute``), ``embedding_attribute``, ``run_key``, ``overwrite`` and
    the parameters of :class:`kalos_core.bae.BAEConfig`."""
    return measure_run(RUN, collection, progress, **params)
