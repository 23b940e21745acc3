"""The scorecard against FiftyOne's own evaluation on LVIS r1/r2 (skipped without ../shared/data):
each rater scored against the other equals ``evaluate_detections(rater field, gt_field=other field,
method="coco", classwise=True, iou=0.5)`` class by class (TP, FP, FN, hence P and R), the matched
labels' IoU (localisation error) and area ratios (size tendency), the labels behind extras and misses (FiftyOne's fp and fn), and
the class-blind confusion matrix (``classwise=False``); then the operator's stored run (a field as
the reference, a consensus run's field as ``reference_field``) and the panel's clicks."""

import collections

import numpy as np
import pytest

pytestmark = pytest.mark.realdata
FIELDS = {"r1": "raters_r1", "r2": "raters_r2"}


@pytest.fixture(scope="module")
def lvis(fo_isolated, lvis_subset_path):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import import_multirater_coco

    return import_multirater_coco("kalos-lvis-scorecard", str(lvis_subset_path), layout="rater_fields",
                                  label_field="raters", placeholders=False)


@pytest.fixture(scope="module")
def cards(lvis_subset_path):
    from kalos_core import load_coco
    from kalos_core.scorecard import ScorecardConfig, compute_scorecards

    return compute_scorecards(load_coco(lvis_subset_path, "bbox"), ScorecardConfig(iou=0.5))


def _fiftyone_counts(results) -> dict:
    """class -> [tp, fp, fn] of a classwise evaluation's (ytrue, ypred) pairs."""
    out = collections.defaultdict(lambda: [0, 0, 0])
    for yt, yp in zip(results.ytrue, results.ypred):
        if yt == yp:
            out[yt][0] += 1
        elif yt == results.missing:
            out[yp][1] += 1
        else:
            out[yt][2] += 1
    return out


@pytest.mark.parametrize("rater,other", [("r1", "r2"), ("r2", "r1")])
def test_each_rater_against_the_other_equals_fiftyones_evaluate_detections(lvis, cards, rater, other):
    key = f"sc_{rater}"
    res = lvis.evaluate_detections(FIELDS[rater], gt_field=FIELDS[other], eval_key=key, method="coco",
                                   classwise=True, iou=0.5)
    fo_counts = _fiftyone_counts(res)
    ours = {r["class"]: r for r in cards.rows if r["rater"] == rater and r["class"] != "(all)"}
    assert set(ours) == set(fo_counts)
    for cls, (tp, fp, fn) in fo_counts.items():
        assert (ours[cls]["tp"], ours[cls]["fp"], ours[cls]["fn"]) == (tp, fp, fn), cls
    total = cards.row(rater)
    tp, fp, fn = (sum(v[i] for v in fo_counts.values()) for i in range(3))
    assert (total["tp"], total["fp"], total["fn"]) == (tp, fp, fn)
    assert total["precision"] == pytest.approx(tp / (tp + fp), abs=0) and total["recall"] == tp / (tp + fn)
    # the matched labels' IoU as FiftyOne stored it on the rater's labels: the localisation error
    ious = [i for ls in lvis.values(f"{FIELDS[rater]}.detections.{key}_iou") for i in ls if i is not None]
    assert len(ious) == tp
    assert total["loc_error"] == pytest.approx(1 - np.mean(ious), abs=1e-9)
    # the size tendency from the pairs FiftyOne matched (each tp rater label's `<key>_id` names its reference label)
    area = {i: b[2] * b[3] for ids, bs in zip(*lvis.values([f"{FIELDS[other]}.detections.id",
                                                            f"{FIELDS[other]}.detections.bounding_box"]))
            for i, b in zip(ids or [], bs or [])}
    pairs = lvis.values([f"{FIELDS[rater]}.detections.bounding_box", f"{FIELDS[rater]}.detections.{key}_id"])
    logs = [np.log(b[2] * b[3] / area[g]) for bs, gs in zip(*pairs) for b, g in zip(bs or [], gs or []) if g]
    assert len(logs) == tp and total["size_bias"] == pytest.approx(np.expm1(np.mean(logs)), abs=1e-9)
    # label by label: the plugin's run names as extras and misses exactly the labels FiftyOne marks fp and fn
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.scorecard import scorecard_run

    run = scorecard_run(lvis, rater_fields=[FIELDS[rater], FIELDS[other]], run_key=f"ids_{rater}", reference=other)
    flagged = lambda field, status: {i for ids, ss in zip(*lvis.values([f"{field}.detections.id",
                                                                         f"{field}.detections.{key}"]))
                                     for i, s in zip(ids or [], ss or []) if s == status}
    ours = lambda outcome: {i for ids in run.labels[rater][outcome].values() for i in ids}
    assert ours("extras") == flagged(FIELDS[rater], "fp") and len(ours("extras")) == fp
    assert ours("misses") == flagged(FIELDS[other], "fn") and len(ours("misses")) == fn


def test_the_confusion_matrix_equals_fiftyones_class_blind_evaluation(lvis, cards):
    res = lvis.evaluate_detections(FIELDS["r1"], gt_field=FIELDS["r2"], eval_key="sc_blind", method="coco",
                                   classwise=False, iou=0.5)
    pairs = collections.Counter(zip(res.ytrue, res.ypred))
    conf = cards.confusion["r1"]
    names = [res.missing if c == "(none)" else c for c in conf["classes"]]
    ours = collections.Counter({(names[i], names[j]): v for i, row in enumerate(conf["matrix"])
                                for j, v in enumerate(row) if v})
    assert ours == pairs
    assert sum(v for (a, b), v in pairs.items() if a != b and res.missing not in (a, b)) > 0   # confusions exist


def test_the_operator_stores_the_engines_scorecards_with_a_field_as_the_reference(lvis, cards):
    from tests.fiftyone.helpers import form_errors as errors, resolved_form as form, run_operator as execute

    execute("compute_scorecards", lvis, rater_fields=list(FIELDS.values()), run_key="sc", reference="raters_r2")
    res = lvis.load_run_results("sc")
    assert res.raters == ["r1"] and res.reference == "r2" and lvis.get_run_info("sc").config.reference == "r2"
    want = [r for r in cards.rows if r["rater"] == "r1"]      # the boxes come back from FiftyOne's relative
    assert len(res.rows) == len(want)                         # coordinates: floats equal to rounding
    for got, row in zip(res.rows, want):
        floats = [k for k, v in row.items() if isinstance(v, float)]
        assert {k: v for k, v in got.items() if k not in floats} == \
            {k: v for k, v in {**row, "reference": "r2"}.items() if k not in floats}
        assert [got[k] for k in floats] == pytest.approx([row[k] for k in floats], rel=1e-12)
    assert res.confusion == {"r1": cards.confusion["r1"]}
    bad = form("compute_scorecards", lvis, rater_fields=list(FIELDS.values()), run_key="sc2", reference="r3")
    assert "reference" in errors(bad)


def test_the_panel_shows_the_labels_behind_a_raters_extras_and_misses(lvis, cards):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.scorecard import scorecard_run
    from tests.fiftyone.helpers import Panel

    scorecard_run(lvis, rater_fields=list(FIELDS.values()), run_key="sc_panel")
    p = Panel(lvis, "kalos_scorecards").call("on_change_run", value="sc_panel")
    assert [t["name"] for t in p.data["raters"]] == ["precision", "recall", "f1"]
    assert p.data["raters"][2]["y"] == [pytest.approx(cards.row(r)["f1"]) for r in ("r1", "r2")]
    view = p.call("on_click_rater", id="f1:r1", x="r1").view()       # r1's 353 extras, r2's 372 labels it missed
    assert (view.count("raters_r1.detections"), view.count("raters_r2.detections")) == (353, 372)
    extras = p.data["classes"][0]
    top = extras["x"][0]
    view = p.call("on_click_class", id=f"extras:{top}", x=top).view()
    assert view.count("raters_r1.detections") == cards.row("r1", top)["fp"] and not view.count("raters_r2.detections")


def test_a_consensus_runs_field_can_be_the_reference(lvis):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.consensus import consensus_run
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.scorecard import scorecard_run

    compute_agreement_run(lvis, rater_fields=list(FIELDS.values()), run_key="agr", bootstrap=0)
    consensus_run(lvis, agreement_key="agr")
    res = scorecard_run(lvis, rater_fields=list(FIELDS.values()), run_key="sc_cons", reference_field="agr_consensus")
    cons = lvis.count("agr_consensus.detections")
    assert res.raters == ["r1", "r2"] and res.reference == "agr_consensus"
    for rater in ("r1", "r2"):       # the consensus keeps the units both drew: each rater finds them all
        row = res.row(rater)
        assert row["n_reference"] == cons and row["fn"] == 0 and row["recall"] == 1.0


def test_on_lvis_the_outcomes_give_the_confusion_and_size_subsets_sum_to_the_whole(lvis, cards):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.scorecard import scorecard_run
    from kalos_core.scorecard.subsets import confusion_matrix, subset_rows
    from tests.fiftyone.helpers import Panel

    res = cards.to_dict()
    split = subset_rows(res, "size")
    for rater in ("r1", "r2"):
        assert confusion_matrix(res["outcomes"][rater]) == cards.confusion[rater]
        parts = [next(r for r in rows if r["rater"] == rater and r["class"] == "(all)") for rows in split.values()]
        whole = cards.row(rater)
        assert [sum(p[k] for p in parts) for k in ("tp", "fp", "fn")] == [whole["tp"], whole["fp"], whole["fn"]]
    # the panel: the largest confusion between two classes, clicked, shows exactly that many r1 labels
    conf = cards.confusion["r1"]
    k = len(conf["classes"]) - 1
    n, i, j = max((conf["matrix"][i][j], i, j) for i in range(k) for j in range(k) if i != j)
    scorecard_run(lvis, rater_fields=list(FIELDS.values()), run_key="sc_cells")
    p = Panel(lvis, "kalos_scorecards").call("on_change_run", value="sc_cells")
    view = p.call("on_click_cell", x=conf["classes"][j], y=conf["classes"][i], z=n).view()
    assert view.count("raters_r1.detections") == n > 0 and not view.count("raters_r2.detections")
