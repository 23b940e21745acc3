"""Which samples need another rater (:mod:`kalos_core.next_rater`), on a FiftyOne collection.

::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.next_rater import next_rater_run
    next_rater_run(dataset, rater_fields=["raters_a", "raters_b"], run_key="next_rater")
    dataset.sort_by("next_rater_gain", reverse=True)       # the samples where one more rater pays most

Writes ``<run_key>_gain`` on every sample with two or more raters: the expected narrowing of the
interval of its α from one more rater (the formula in docs/scorecards.md); the run
(``config.method == "kalos_next_rater"``) stores every sample's row (α, spread, gain), largest first.
"""

from __future__ import annotations

from kalos_core.next_rater import NextRaterResult

from ..measure_runs import MeasureRun, measure_run
from ..registry import Offered

DEFAULT_KEY = "next_rater"


def _write(collection, source, run_key: str, result: NextRaterResult, data) -> None:
    import fiftyone as fo

    dataset = collection._dataset
    field = f"{run_key}_gain"
    if not dataset.has_sample_field(field):
        dataset.add_sample_field(field, fo.FloatField, description=f"KaLOS: expected narrowing of the sample's "
                                 f"α interval from one more rater (run {run_key!r})")
    dataset.set_values(field, {str(r["image"]): r["gain"] for r in result.rows}, key_field="id")


def _card(res: NextRaterResult, key: str) -> tuple:
    top = res.rows[:5]
    return "KaLOS: which samples need another rater", [
        ("Samples ranked", len(res.rows)),
        *((f"{r['image']} ({r['n_raters']} raters, α {r['alpha']:.3f})", f"gain {r['gain']:.3f}") for r in top)], \
        f"Sort the grid by {key}_gain (descending): the samples where one more rater narrows α's interval most."


RUN = MeasureRun(
    "next-rater", "next-rater ranking", DEFAULT_KEY, ("box", "polygon", "keypoints", "cuboids"),
    owned_paths=lambda source, run_key: [f"{run_key}_gain"], write=_write, config_key="next_rater_config",
    app=Offered(
        "KaLOS next rater", "rank_next_rater", "KaLOS: which samples need another rater",
        "Ranks the samples by how much one more rater is expected to narrow their α's interval (a rater "
        "bootstrap per sample); writes <run_key>_gain to sort by",
        key_help="results go to <run_key>_gain", card=_card,
        notice=lambda res, key: f"KaLOS next rater {key!r}: {len(res.rows)} samples ranked; sort by {key}_gain"))


def next_rater_run(collection, progress=None, **params) -> NextRaterResult:
    """The ranking on ``collection`` stored under ``run_key``, ``<run_key>_gain`` written: the rater
    source (``rater_fields`` or ``label_field`` + ``rater_attribute``), ``run_key``, ``overwrite`` and the
    parameters of :class:`kalos_core.next_rater.NextRaterConfig`."""
    return measure_run(RUN, collection, progress, **params)
