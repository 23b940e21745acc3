"""Which samples need another rater (:mod:`kalos_core.next_rater`), on a FiftyOne collection.

::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.next_rater import next_rater_run
    next_rater_run(dataset, rater_fields=["raters_a", "raters_b"], run_key="next_rater")
    dataset.sort_by("next_rater_gain", reverse=True)       # the samples where one more rater pays most

With ``agreement_key`` the units are those of that agreement run (its ``<key>_unit`` on the labels,
so each sample's α is that run's ``<key>_alpha``); without, the labels are matched with the
agreement's defaults. Writes ``<run_key>_gain`` on every sample with two or more raters: the
expected narrowing of the interval of its α from one more rater (the formula in
docs/scorecards.md); the run
(``config.method == "kalos_next_rater"``) stores every sample's row (α, spread, gain), largest first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kalos_core.measure import MeasureData
from kalos_core.next_rater import NextRaterResult
from kalos_core.params import Config, param

from .. import run_store
from ..adapter import read_dataset
from ..errors import SetupError
from ..measure_runs import MeasureRun, measure_run
from ..registry import Offered

DEFAULT_KEY = "next_rater"


@dataclass(frozen=True)
class Inputs(Config):
    """The plugin-only input of a next-rater run."""

    agreement_key: str | None = param(
        None, "str", "an agreement run whose units (and so per-sample α) to use; default: match the labels with the "
        "agreement's defaults", optional=True, label="Agreement run", flag="")


def _read(collection, source, config, extras) -> MeasureData:
    """The raters' labels; with ``agreement_key``, only those in a unit of that run, and the units."""
    from .consensus import read_units

    data = read_dataset(collection, source)
    key = extras.get("agreement_key")
    if not key:
        return MeasureData(data)
    try:
        run_store.get_run(collection._dataset, key, run_store.AGREEMENT)
    except SetupError as e:
        raise SetupError(str(e), "agreement_key") from None
    unit_of = read_units(collection, source, key)
    if not unit_of:
        raise SetupError(f"no label of the view carries {key}_unit: run the agreement {key!r} again on these "
                         "rater fields, or leave the agreement run empty", "agreement_key")
    data = replace(data, images=[replace(im, annotations=[a for a in im.annotations if str(a.id) in unit_of])
                                 for im in data.images])
    return MeasureData(data, options={"units": unit_of})


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
    read=_read, inputs=Inputs,
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
