"""compute_variations on a real database: the stored counts are the engine's on the same labels,
the per-label type / partner / IoU, the views a panel click shows, form errors and overwrite."""

import fiftyone as fo
import pytest

from kalos_core import load_coco
from kalos_core.demo_data import build_demo
from kalos_core.variations import VariationConfig, compute_variations
from tests.fiftyone.helpers import (THREE_RATER_FIELDS as FIELDS, Panel, form_errors as errors, rater_dataset, resolved_form as form,
                                   run_operator as execute, three_raters)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return load_coco(build_demo(tmp_path_factory.mktemp("demo"), n_images=10, seed=3, with_images=False), "bbox")


def test_variations_match_the_engine(fo_isolated, demo):
    ds, fields = rater_dataset(fo_isolated, demo, with_metadata=True, annotation_ids=False)
    execute("compute_variations", ds, rater_fields=fields, run_key="var", thresholds="0.5,0.75")
    res = ds.load_run_results("var")
    expected = compute_variations(demo, VariationConfig(thresholds=(0.5, 0.75)))
    assert res.counts == expected.counts and res.by_rater.keys() == expected.by_rater.keys()
    assert res.boundary_iou["counts"] == expected.boundary_iou
    got = [t for f in fields for row in ds.values(f"{f}.detections.var_variation") for t in row or []]
    assert sum(1 for t in got if t is not None) == sum(expected.counts["0.5"].values())


def test_variations_known_answer_and_views(fo_isolated):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.views import iou_bin_view, type_view

    ds = three_raters(fo_isolated)
    execute("compute_variations", ds, rater_fields=FIELDS, run_key="var", thresholds="0.5")
    counts = ds.load_run_results("var").counts["0.5"]
    # sample 1: r1/r2 agree on A, r3's B is wrong_class for both; r1's lone box is missed by the others
    # sample 2: six agreed labels
    assert counts["wrong_class"] == 1 and counts["agreed"] == 8 and counts["missed"] + counts["additional"] == 1
    types_r3 = ds.values("raters_r3.detections.var_variation")
    assert types_r3[0] == ["wrong_class"]
    partner = ds.values("raters_r3.detections.var_partner")[0][0]
    assert partner in ds.values("raters_r1.detections.id")[0] + ds.values("raters_r2.detections.id")[0]
    v = type_view(ds, "var", "wrong_class")
    assert len(v) == 1 and v.count("raters_r3.detections") == 1 and v.count("raters_r1.detections") == 0
    assert len(type_view(ds, "var", "agreed", rater="r3")) == 1
    whole = iou_bin_view(ds, "var", 0.0, 1.0)
    assert sum(whole.count(f"{f}.detections") for f in FIELDS) == 8
    assert len(iou_bin_view(ds, "var", 0.0, 0.05)) == 0


def test_variations_form_errors_and_overwrite(fo_isolated):
    ds = three_raters(fo_isolated)
    assert "thresholds" in errors(form("compute_variations", ds, rater_fields=FIELDS, run_key="v", thresholds="x"))
    execute("compute_variations", ds, rater_fields=FIELDS, run_key="v")
    errs = errors(form("compute_variations", ds, rater_fields=FIELDS, run_key="v"))
    assert "overwrite" in errs
    execute("compute_variations", ds, rater_fields=FIELDS, run_key="v", overwrite=True, threshold=0.9)
    assert ds.get_run_info("v").config.threshold == 0.9
    execute("delete_kalos_run", ds, run_key="v")
    assert not ds.has_field("raters_r1.detections.v_variation")


# -- panel -------------------------------------------------------------------------------------

def test_panel_draws_the_stored_counts_and_clicks_set_the_views(fo_isolated):

    ds = three_raters(fo_isolated)
    execute("compute_variations", ds, rater_fields=FIELDS, run_key="var", thresholds="0.5,0.9")
    res = ds.load_run_results("var")
    p = Panel(ds, "kalos_variation_types").call("on_load")
    assert p.state["run_key"] == "var" and {"summary", "thresholds", "raters", "iou"} <= p.rendered()
    bars = {t["name"]: t for t in p.data["thresholds"]}
    assert bars["agreed"]["x"] == ["0.5", "0.9"]
    assert bars["agreed"]["y"] == [res.counts["0.5"]["agreed"], res.counts["0.9"]["agreed"]]
    assert bars["wrong class"]["y"][0] == 1 and "merged, wrong class" in bars   # words, not raw keys
    raters = {t["name"]: t for t in p.data["raters"]}
    assert raters["wrong class"]["x"] == ["r1", "r2", "r3"] and raters["wrong class"]["y"] == [0, 0, 1]
    (hist,) = p.data["iou"]
    assert sum(hist["y"]) == res.counts["0.5"]["agreed"] and hist["x"][0] == "0.50"
    view = p.call("on_click_threshold", x="0.5", trace="wrong class").view()
    assert view.count("raters_r3.detections") == 1 and view.count("raters_r1.detections") == 0
    assert "wrong class" in p.state["selection"]
    view = p.call("on_click_rater", x="r1", trace="agreed").view()
    assert view.count("raters_r1.detections") == 3 and view.count("raters_r2.detections") == 0
    # the fullest IoU bin: exactly its agreed labels
    k = max(range(len(hist["y"])), key=lambda i: hist["y"][i])
    view = p.call("on_click_iou", x=hist["x"][k]).view()
    assert sum(view.count(f"{f}.detections") for f in FIELDS) == hist["y"][k]
    ious = [v for f in FIELDS for row in view.values(f"{f}.detections.var_iou") for v in row or []]
    low = float(hist["x"][k])
    assert all(low <= v <= low + 0.05 + 1e-9 for v in ious)


def test_panel_without_a_run_offers_the_operator(fo_isolated):
    import uuid


    ds = fo_isolated.Dataset(f"kalos-empty-{uuid.uuid4().hex[:6]}")
    p = Panel(ds, "kalos_variation_types").call("on_load")
    assert {"empty_state", "open_operator"} <= p.rendered()
    (prompt,) = p.call("open_operator").ops("prompt_user_for_operation")
    assert prompt["operator_uri"] == "@kalos/agreement/compute_variations"


def test_variation_views_follow_the_click_rule(fo_isolated):
    """Fields: only the raters' (and FiftyOne's own); the user's sort is kept; counts exact."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.views import iou_bin_view, label_count, type_view

    ds = three_raters(fo_isolated)
    execute("compute_variations", ds, rater_fields=FIELDS, run_key="var", thresholds="0.5")
    ds.add_sample_field("extra", fo.StringField)
    ids = ds.values("id")
    for k, s in enumerate(ds.iter_samples(autosave=True)):
        s["extra"], s["rank"] = "x", float(k)
    user = ds.sort_by("rank", reverse=True)
    for view in (type_view(ds, "var", "agreed", current=user), iou_bin_view(ds, "var", 0.0, 1.0, current=user),
                 type_view(ds, "var", "agreed", rater="r1", current=user)):
        schema = set(view.get_field_schema())
        assert set(FIELDS) <= schema and "extra" not in schema and "rank" not in schema
        assert view.values("id") == ids[::-1]          # the user's order, not the dataset's
    assert type_view(ds, "var", "agreed").values("id") == ids  # no user sort: the dataset's order
    # counts from the stored per-label fields
    want = sum(1 for f in FIELDS for row in ds.values(f"{f}.detections.var_variation") for t in row or []
               if t == "agreed")
    assert label_count(type_view(ds, "var", "agreed", current=user), ds, "var") == want == 8
    v = type_view(ds, "var", "wrong_class", current=user)
    assert label_count(v, ds, "var") == 1 and len(v) == 1
    assert label_count(type_view(ds, "var", "agreed", rater="r3", current=user), ds, "var") == \
        sum(1 for row in ds.values("raters_r3.detections.var_variation") for t in row or [] if t == "agreed")


def test_variation_panel_clicks_only_the_run_threshold(fo_isolated):
    """A segment at the run's threshold shows that type's labels (count in the selection line); a
    segment at another threshold says types exist only at the run's and leaves the view alone."""

    ds = three_raters(fo_isolated)
    execute("compute_variations", ds, rater_fields=FIELDS, run_key="var", thresholds="0.5,0.75")
    p = Panel(ds, "kalos_variation_types").call("on_load")
    assert p.state["threshold"] == "0.5"
    view = p.call("on_click_threshold", trace="agreed", x="0.5").view()
    assert sum(view.count(f"{f}.detections") for f in FIELDS) == 8
    assert p.state["selection"].startswith(f"Showing only the **8 agreed labels at IoU 0.5**, on {len(view)} samples")
    p.call("on_click_threshold", trace="wrong_class", x="0.75")
    assert not p.ops("set_view") and "only at the run's IoU 0.5" in p.state["selection"]
    view = p.call("on_click_rater", trace="wrong_class", x="r3").view()
    assert view.count("raters_r3.detections") == 1 and view.count("raters_r1.detections") == 0
    assert "**1 wrong class labels of r3 at IoU 0.5**, on 1 samples" in p.state["selection"]


def test_panel_names_who_missed_the_small_objects_and_its_conventions(fo_isolated):
    """r1 and r2 draw one large and two small boxes; r3 draws only the large one. Per label the small
    boxes are agreed (one agreed pair beats one missed pair), per pair r3 missed 2 of r1's and 2 of r2's."""
    import uuid

    from kalos_core.conventions import PHRASES

    ds = fo_isolated.Dataset(f"kalos-var-{uuid.uuid4().hex[:8]}")
    d = lambda box: fo.Detection(label="A", bounding_box=box)  # noqa: E731
    large, small = [0.1, 0.1, 0.4, 0.4], [[0.7, 0.7, 0.04, 0.04], [0.8, 0.1, 0.04, 0.04]]
    s = fo.Sample(filepath="/nonexistent/1.jpg", rater_list=["r1", "r2", "r3"],
                  metadata=fo.ImageMetadata(width=100, height=100))
    s["raters_r1"] = fo.Detections(detections=[d(large), *map(d, small)])
    s["raters_r2"] = fo.Detections(detections=[d(large), *map(d, small)])
    s["raters_r3"] = fo.Detections(detections=[d(large)])
    ds.add_sample(s)
    execute("compute_variations", ds, rater_fields=FIELDS, run_key="var", thresholds="0.5")
    res = ds.load_run_results("var")
    assert res.counts["0.5"]["missed"] == 0 and res.missed_by == {"0.5": {"r1": 0, "r2": 0, "r3": 4}}
    assert res.conventions == {k: PHRASES[k] for k in ("majority", "per_pair")}
    p = Panel(ds, "kalos_variation_types").call("on_load")
    summary = p.state["summary"]
    assert "the other raters' labels each rater did not draw: r3 4, r1 0, r2 0." in summary
    table = p.state["missed_table"]   # below the charts: the chart stays in view in a split
    assert "| r3 | 2 | 2 | – |" in table and "| r1 | – | 0 | 0 |" in table and "| r3 |" not in summary
    assert {"conventions", "missed_table"} <= p.rendered()
    assert p.state["conventions"] == "*Conventions:* " + "; ".join(res.conventions.values()) + "."
