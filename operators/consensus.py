"""Operators of consensus and review: build_consensus (the form of
:mod:`..fiftyone_layer.measures.consensus`), export_consensus_coco, tag_for_review.

Thin adapters: the work is done by :mod:`..fiftyone_layer.measures.consensus` and :mod:`.review`.
"""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from kalos_core.matching.params import MATCHING_PARAMS

from ..fiftyone_layer import run_store
from .cards import show_card
from .common import form
from ..fiftyone_layer.measures.consensus import AGREEMENT, MEASURE, METHOD as CONSENSUS, check_consensus, consensus_key, consensus_steps
from ..fiftyone_layer.measures.consensus import RUN as CONSENSUS_RUN
from .measure_operator import MeasureOperator, report_errors
from ..fiftyone_layer.measures.consensus import check_consensus_export, export_consensus_coco, fusion_params
from .common import agreement_run_input, check_form, chosen_agreement_run, number_input
from .forms import param_inputs
from ..fiftyone_layer.review import check_review, review_view_name, tag_for_review, users_tag
from ..fiftyone_layer.saved_views import select_saved_view


class BuildConsensus(MeasureOperator):
    RUN = CONSENSUS_RUN

    @property
    def config(self):
        config = super().config
        config.view_target = False   # the agreement run's view, not the App's
        return config

    def resolve_input(self, ctx):
        ds, p = ctx.dataset, ctx.params
        inputs = types.Object()
        props = {"agreement_key": agreement_run_input(ctx, inputs, "agreement_key", "Agreement run")}
        if props["agreement_key"] is None:
            return form(inputs, CONSENSUS_RUN.app.label)
        props.update(param_inputs(ctx, inputs, MEASURE, skip=MATCHING_PARAMS))
        key = chosen_agreement_run(ctx, "agreement_key")
        if key in run_store.runs_of(ds, AGREEMENT):
            target = consensus_key(key)
            about = run_store.describe_run(ds, target) if run_store.run_method(ds, target) == CONSENSUS else None
            props["overwrite"] = None
            if about:
                props["overwrite"] = inputs.bool(
                    "overwrite", default=False, label=f"Overwrite the existing consensus {target!r}",
                    description=f"Replaces the run and its field {target}: {about}")
            inputs.view("writes", types.Notice(label=f"Writes the new field {target}; the raters' fields are "
                                                     "only read."))
        check_form(props, lambda: check_consensus(ds, key, overwrite=bool(p.get("overwrite")),
                                                  **fusion_params(p)))
        return form(inputs, CONSENSUS_RUN.app.label)

    def steps(self, ctx):
        p = ctx.params
        return consensus_steps(ctx.dataset, chosen_agreement_run(ctx, "agreement_key"),
                               overwrite=bool(p.get("overwrite")), **fusion_params(p))

    def run_key(self, ctx) -> str:
        return consensus_key(chosen_agreement_run(ctx, "agreement_key"))


class ExportConsensusCoco(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(
            name="export_consensus_coco", label="KaLOS: export consensus as COCO", dynamic=True,
            execute_as_generator=True, view_target=False, icon="/assets/icon.svg",
            description="A consensus run's labels as one COCO detection file (labels only; tied labels, "
                        "whose class was not guessed, left out)")

    def __call__(self, dataset, consensus_key, labels_path, overwrite=False):
        return export_consensus_coco(dataset, consensus_key, labels_path, overwrite)

    def resolve_input(self, ctx):
        ds, p = ctx.dataset, ctx.params
        inputs = types.Object()
        props = {"consensus_key": agreement_run_input(
            ctx, inputs, "consensus_key", "Consensus run", method=CONSENSUS,
            missing="No KaLOS consensus run on this dataset yet: run 'KaLOS: build consensus' first.")}
        if props["consensus_key"] is None:
            return form(inputs, "KaLOS: export consensus as COCO")
        props["labels_path"] = inputs.str("labels_path", required=True, label="COCO file to write",
                                          description="e.g. /data/consensus.json; images are not copied")
        props["overwrite"] = inputs.bool("overwrite", default=False, label="Write over an existing file")
        if p.get("labels_path"):
            check_form(props, lambda: check_consensus_export(
                ds, chosen_agreement_run(ctx, "consensus_key", CONSENSUS), p["labels_path"],
                bool(p.get("overwrite"))))
        return form(inputs, "KaLOS: export consensus as COCO")

    def execute(self, ctx):
        p = ctx.params
        key = chosen_agreement_run(ctx, "consensus_key", CONSENSUS)

        def work():   # a generator for report_errors
            yield from ()
            return export_consensus_coco(ctx.dataset, key, p.get("labels_path"), bool(p.get("overwrite")))

        out = yield from report_errors(ctx, work(), "KaLOS: export failed")
        yield show_card(ctx, "KaLOS: consensus exported as COCO", [
            ("Labels written", out["labels"]), ("Samples", out["samples"]),
            ("Tied labels left out (class not guessed)", out["left_out_ties"])],
            f"the COCO file {out['path']} (labels only; the dataset is unchanged)", key,
            "Load it with FiftyOne's COCO importer or your training code.", **out)


class TagForReview(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(
            name="tag_for_review", label="KaLOS: tag for review", dynamic=True, view_target=False,
            execute_as_generator=True, icon="/assets/icon.svg",
            description="Tag samples with low α and labels that are unmatched, disagree on class or have no "
                        "consensus; save them as a view")

    def __call__(self, dataset, **params):
        return tag_for_review(dataset, **params)

    def resolve_input(self, ctx):
        ds, p = ctx.dataset, ctx.params
        inputs = types.Object()
        props = {"run_key": agreement_run_input(ctx, inputs, "run_key", "Agreement run")}
        if props["run_key"] is None:
            return form(inputs, "KaLOS: tag for review")
        key = chosen_agreement_run(ctx, "run_key")
        props["tag"] = inputs.str("tag", default="review", required=True, label="Tag")
        tag = p.get("tag", "review")
        theirs = users_tag(ds, tag.strip()) if isinstance(tag, str) and tag.strip() else (0, 0)
        props["join_tag"] = None
        if any(theirs):
            props["join_tag"] = inputs.bool(
                "join_tag", default=False, label=f"Add to the existing tag {tag.strip()!r}",
                description=f"{theirs[0]} sample(s) and {theirs[1]} label(s) carry it already, not tagged by KaLOS; "
                            "deleting the run takes the tag off only what the run tagged")
        inputs.bool("use_alpha", default=True, label="Tag samples whose α lies below a level")
        if p.get("use_alpha", True):
            props["alpha_below"] = number_input(ctx, inputs, "alpha_below", lo=-1.0, hi=1.0, default=0.667,
                                                 label="α level")
        props["unmatched"] = inputs.bool("unmatched", default=True, label="Tag unmatched labels")
        props["class_disagreement"] = inputs.bool("class_disagreement", default=True,
                                                  label="Tag labels whose unit disagrees on the class")
        has_consensus = run_store.run_method(ds, consensus_key(key)) == CONSENSUS
        props["unsupported"] = inputs.bool(
            "unsupported", default=has_consensus, label="Tag labels of units the consensus did not support",
            description=f"needs the consensus run {consensus_key(key)!r}")
        props["view_name"] = inputs.str("view_name", default=review_view_name(key), label="Saved view")
        check_form(props, lambda: check_review(ds, key, p.get("tag", "review"), self._alpha(p),
                                           p.get("unmatched", True), p.get("class_disagreement", True),
                                           p.get("unsupported", has_consensus), p.get("view_name"),
                                           bool(p.get("join_tag"))))
        return form(inputs, "KaLOS: tag for review")

    @staticmethod
    def _alpha(p):
        return p.get("alpha_below", 0.667) if p.get("use_alpha", True) else None

    def execute(self, ctx):
        p = ctx.params
        key = chosen_agreement_run(ctx, "run_key")
        unsupported = p.get("unsupported", run_store.run_method(ctx.dataset, consensus_key(key)) == CONSENSUS)

        def work():
            return tag_for_review(ctx.dataset, key, p.get("tag", "review"), self._alpha(p),
                                  p.get("unmatched", True), p.get("class_disagreement", True), unsupported,
                                  p.get("view_name"), bool(p.get("join_tag")))
            yield  # noqa: unreachable - makes this a generator for report_errors

        counts = yield from report_errors(ctx, work())
        yield from select_saved_view(ctx, counts["view"])
        yield show_card(ctx, "KaLOS: tagged for review", [
            ("Samples tagged (α below the level)", counts["samples"]), ("Labels tagged", counts["labels"]),
            ("... unmatched", counts["unmatched"]), ("... class disagreement", counts["class_disagreement"]),
            ("... in units the consensus did not support", counts["unsupported"]),
            ("Samples in the view", counts["n_view_samples"])],
            f"tag {p.get('tag', 'review')!r} on those samples and labels; saved view {counts['view']} (selected now)",
            key, "Review the selected view; deleting the run takes the tag off what it tagged.", **counts)
