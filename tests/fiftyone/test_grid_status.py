"""The grid and the forms (issue 13): status colours in the App's colour scheme, one status
filter over every rater field, polygons imported as outlines, the disagreement view, the
rater_list preselection, the wording of numeric bounds."""

import uuid

import numpy as np
import pytest

from kalos_core.demo_data import build_demo
from tests.fiftyone.helpers import shown_result

AGREE = "@kalos/agreement/compute_agreement"
STATUS = {"agreed": "#2ecc40", "class_disagreement": "#ffa500", "unmatched": "#ff3b30"}


@pytest.fixture(scope="module")
def demo_path(tmp_path_factory):
    return build_demo(tmp_path_factory.mktemp("demo"), n_images=10, seed=3, with_images=False)


@pytest.fixture
def imported(fo_isolated, demo_path):
    """The demo file imported as the importer does it: one Detections and one Polylines field per
    rater, rater_list and the importer's dataset.info."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import import_multirater_coco

    return import_multirater_coco(f"kalos-grid-{uuid.uuid4().hex[:8]}", str(demo_path),
                                  label_types=("detections", "segmentations"), use_polylines=True)


def box_fields(ds):
    return sorted(f for f in ds.get_field_schema() if f.startswith("raters_detections_"))


def run(ds, **params):
    import fiftyone.operators as foo

    res = foo.execute_operator(AGREE, dataset=ds.name, params={"run_key": "kalos", **params})
    assert res.error is None, res.error
    return res


def resolve(uri, ds, params):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext, Executor

    op = foo.get_operator(uri)
    ctx = ExecutionContext(request_params={"dataset_name": ds.name, "params": params}, executor=Executor(),
                           operator_uri=uri)
    return op.resolve_input(ctx).type.properties


# -- colours ----------------------------------------------------------------------------------------

def test_status_colours_are_added_for_the_run_fields_only_and_removed_with_the_run(fo_isolated, imported):
    fo = fo_isolated
    ds = imported
    fields = box_fields(ds)
    user = {"path": "raters_segmentations_careful", "colorByAttribute": "label",
            "valueColors": [{"value": "circle", "color": "#123456"}]}
    ds.app_config.color_scheme = fo.ColorScheme(
        color_by="field", fields=[user, {"path": fields[0], "fieldColor": "#abcdef"}])
    ds.save()
    run(ds, rater_fields=fields)
    scheme = ds.app_config.color_scheme
    by_path = {e["path"]: e for e in scheme.fields}
    assert scheme.color_by == "value"
    for f in fields:
        assert by_path[f]["colorByAttribute"] == "kalos_status"
        assert {v["value"]: v["color"] for v in by_path[f]["valueColors"]} == STATUS
    assert by_path[fields[0]]["fieldColor"] == "#abcdef"              # the user's sidebar colour stays
    # the tiles' α bubbles: one colour scale, the α bands' colours of the panels, for every α of the run
    from fiftyone.plugins.orgs.kalos.agreement.panels.common import BAND_COLORS
    from kalos_core.reliability import interpret

    alphas = {a for a in ds.values("kalos_alpha") if a is not None and not np.isnan(a)}
    colours = {v["value"]: v["color"] for v in by_path.pop("kalos_alpha")["valueColors"]}
    band = {name: "#%02x%02x%02x" % tuple(map(int, rgb.split(","))) for name, rgb in BAND_COLORS.items()}
    shown = {f"{a:.3f}".rstrip("0").rstrip(".") for a in alphas}   # as a tile shows α: 0.512, 1
    assert colours == {k: band[interpret(float(k))] for k in shown}
    assert len(set(colours.values())) <= 5 < len(alphas)
    # every other label field (polygons too): one colour, as when colours went by field, never by class
    others = [f for f in ds.get_field_schema(embedded_doc_type=fo.Label) if f not in fields]
    assert others and len(scheme.fields) == len(fields) + len(others) + 1    # + the α bubbles' entry
    for f in others:
        (colour,) = {v["color"] for v in by_path[f]["valueColors"]}
        assert by_path[f]["colorByAttribute"] == "kalos_one_colour" and by_path[f]["fieldColor"] == colour
        assert colour not in STATUS.values() and colour not in ("#ee0000", "#ee6600", "#009900")
        assert ds.count(f"{f}.polylines.kalos_one_colour") == 0       # an attribute no label has

    run(ds, rater_fields=fields[:2], run_key="pair")                   # newest run on two fields
    by_path = {e["path"]: e for e in ds.app_config.color_scheme.fields}
    assert [by_path[f]["colorByAttribute"] for f in fields] == ["pair_status"] * 2 + ["kalos_status"] * (len(fields) - 2)
    foo_delete(ds, "pair")                                             # back to the run left on them
    by_path = {e["path"]: e for e in ds.app_config.color_scheme.fields}
    assert all(by_path[f]["colorByAttribute"] == "kalos_status" for f in fields)
    foo_delete(ds, "kalos")
    scheme = ds.app_config.color_scheme
    assert [e["path"] for e in scheme.fields] == ["raters_segmentations_careful", fields[0]]
    assert scheme.fields[0] == user and "colorByAttribute" not in scheme.fields[1]
    assert scheme.color_by == "field"                                  # what the user had


def foo_delete(ds, key):
    import fiftyone.operators as foo

    res = foo.execute_operator("@kalos/agreement/delete_agreement_run", dataset=ds.name, params={"run_key": key})
    assert res.error is None, res.error
    ops = [r["operator_uri"] for r in res.executor.to_json()["requests"]]
    assert "set_color_scheme" in ops                                   # the open App follows


def test_the_app_is_told_the_new_colours(fo_isolated, imported):
    res = run(imported, rater_fields=box_fields(imported))
    reqs = [r for r in res.executor.to_json()["requests"] if r["operator_uri"] == "set_color_scheme"]
    assert reqs and reqs[0]["params"]["color_by"] == "value"
    by_path = {e["path"]: e.get("colorByAttribute") for e in reqs[0]["params"]["fields"]}
    assert by_path.pop("kalos_alpha") is None          # the α bubbles' colours: by value, one scale
    assert by_path == {f: "kalos_status" if f in box_fields(imported) else "kalos_one_colour"
                       for f in imported.get_field_schema(embedded_doc_type=fo_isolated.Label)}


# -- one status filter ----------------------------------------------------------------------------------

def test_statuses_field_lists_each_samples_label_statuses(fo_isolated, imported):
    ds = imported
    fields = box_fields(ds)
    run(ds, rater_fields=fields)
    per_field = [ds.values(f"{f}.detections.kalos_status") for f in fields]
    expected = [sorted({s for rows in row for s in rows or []}) for row in zip(*per_field)]
    assert ds.values("kalos_statuses") == expected
    assert any("unmatched" in row for row in expected) and any("agreed" in row for row in expected)
    assert ds.get_field("kalos_statuses") is not None                 # declared: a sidebar filter


@pytest.mark.parametrize("statuses", [["unmatched"], ["class_disagreement", "unmatched"], ["agreed"]])
def test_status_view_filters_every_rater_field_at_once(fo_isolated, imported, statuses):
    import fiftyone.operators as foo

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import disagreement_view_name

    ds = imported
    fields = box_fields(ds)
    run(ds, rater_fields=fields)
    res = foo.execute_operator("@kalos/agreement/browse_disagreements", dataset=ds.name,
                               params={"run_key": "kalos", "statuses": statuses})
    assert res.error is None, res.error
    name = disagreement_view_name("kalos", statuses)
    shown = shown_result(res)
    assert (shown["view"], shown["samples"]) == (name, len(ds.load_saved_view(name)))
    assert shown["n0"] == str(len(ds.load_saved_view(name))) and name in shown["written"]
    view = ds.load_saved_view(name)
    shown = [s for f in fields for s in view.values(f"{f}.detections.kalos_status", unwind=True)]
    assert shown and set(shown) <= set(statuses)
    # exactly the samples holding such a label in some rater field, with all those labels
    rows = zip(*[ds.values(f"{f}.detections.kalos_status") for f in fields])
    wanted = sum(1 for row in rows if any(s in statuses for labels in row for s in labels or []))
    assert len(view) == wanted
    assert len(shown) == sum(ds.count_values(f"{f}.detections.kalos_status").get(s, 0) for f in fields for s in statuses)


# -- browse_disagreements -------------------------------------------------------------------------------

def test_browse_disagreements_view_holds_the_disagreeing_samples_and_run_fields_only(fo_isolated, imported):
    import fiftyone.operators as foo

    ds = imported
    fields = box_fields(ds)
    run(ds, rater_fields=fields)
    ds.add_sample_field("unrelated", fo_isolated.StringField)
    res = foo.execute_operator("@kalos/agreement/browse_disagreements", dataset=ds.name,
                               params={"run_key": "kalos"})
    assert res.error is None, res.error
    view = ds.load_saved_view("kalos_disagreements")
    disagreeing = [sid for sid, row in zip(ds.values("id"), ds.values("kalos_statuses"))
                   if {"class_disagreement", "unmatched"} & set(row)]
    assert 0 < len(disagreeing) <= len(ds)
    assert sorted(view.values("id")) == sorted(disagreeing)
    alphas = view.values("kalos_alpha")
    assert alphas == sorted(alphas)
    schema = set(view.get_field_schema())
    assert set(fields) <= schema and "kalos_alpha" in schema and "kalos_statuses" in schema
    assert not schema & {"unrelated", "raters_segmentations_careful", "rater_list", "coco_id"}
    # shown as the selected saved view (the selector names it), not as an unsaved copy
    ops = [r["operator_uri"] for r in res.executor.to_json()["requests"]]
    assert ops.index("reload_dataset") < ops.index("set_view")   # the App learns the view, then selects it
    set_view = [r for r in res.executor.to_json()["requests"] if r["operator_uri"] == "set_view"]
    assert [r["params"] for r in set_view] == [{"name": "kalos_disagreements"}]
    assert (shown_result(res)["view"], shown_result(res)["samples"]) == ("kalos_disagreements", len(disagreeing))


def test_status_views_go_with_the_run(fo_isolated, imported):
    import fiftyone.operators as foo

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import delete_agreement_run

    ds = imported
    run(ds, rater_fields=box_fields(ds))
    for statuses in (["unmatched"], ["agreed", "unmatched"]):
        foo.execute_operator("@kalos/agreement/browse_disagreements", dataset=ds.name,
                             params={"run_key": "kalos", "statuses": statuses})
    assert ds.list_saved_views() == ["kalos_status_unmatched", "kalos_status_agreed_unmatched"]
    delete_agreement_run(ds, "kalos")
    assert ds.list_saved_views() == []


# -- import ------------------------------------------------------------------------------------------

def test_imported_polygons_are_outlines(fo_isolated, imported, tmp_path):
    from pycocotools import mask as mask_utils

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import import_multirater_coco

    polys = imported.values("raters_segmentations_careful.polylines", unwind=True)
    assert polys and not any(p.filled for p in polys) and all(p.closed for p in polys)
    # traced from an RLE mask too
    full = mask_utils.encode(np.asfortranarray(np.pad(np.ones((6, 6), dtype=np.uint8), 4)))
    full["counts"] = full["counts"].decode()
    data = {"images": [{"id": 1, "file_name": "a.jpg", "width": 14, "height": 14, "rater_list": ["a", "b"]}],
            "categories": [{"id": 1, "name": "cat"}],
            "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "segmentation": full, "rater_id": "a"}]}
    ds = import_multirater_coco(f"kalos-rle-{uuid.uuid4().hex[:8]}", data, label_types=["segmentations"],
                                use_polylines=True)
    assert ds.first().raters_a.polylines[0].filled is False


# -- forms -------------------------------------------------------------------------------------------

def test_form_preselects_the_fields_of_the_raters_rater_list_names(fo_isolated, imported):
    ds = imported
    raters = sorted(set(ds.distinct("rater_list")))
    props = resolve(AGREE, ds, {})
    assert sorted(props["rater_fields"].default) == sorted(f"raters_detections_{r}" for r in raters)
    # without the importer's info: fields named <prefix>_<rater>
    ds.info.pop("kalos_import")
    ds.save()
    assert sorted(resolve(AGREE, ds, {})["rater_fields"].default) == sorted(f"raters_detections_{r}" for r in raters)
    # raters that rater_list does not name are not preselected
    ds.set_values("rater_list", [[r for r in row if r != raters[0]] for row in ds.values("rater_list")])
    assert raters[0] not in " ".join(resolve(AGREE, ds, {})["rater_fields"].default)


def test_numeric_bounds_are_worded_inclusively(fo_isolated, imported):
    ds = imported
    base = {"rater_fields": box_fields(ds)}
    props = resolve(AGREE, ds, dict(base, threshold=1.0, seed=0))
    assert not props["threshold"].invalid and not props["seed"].invalid
    props = resolve(AGREE, ds, dict(base, threshold=1.5, seed=-1))
    assert props["threshold"].invalid and props["threshold"].error_message == "must be at most 1 (and at least 0)"
    assert props["seed"].invalid and props["seed"].error_message == "must be at least 0 (and at most 4294967295)"
    assert resolve(AGREE, ds, dict(base, seed=1.5))["seed"].error_message == "must be a whole number"
    for name in ("threshold", "seed"):
        assert props[name].type.min is None and props[name].type.max is None   # no "less than" from FiftyOne


def test_every_numeric_input_of_the_plugin_words_its_bounds_inclusively():
    """No operator declares min/max on a number input (FiftyOne's message says "less than")."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2] / "operators"
    offenders = [f"{p.name}:{m.group(0)}" for p in root.glob("*.py")
                 for m in re.finditer(r"inputs\.(?:int|float)\([^)]*\b(?:min|max)=", p.read_text())]
    assert offenders == []


def test_agreement_form_explains_its_settings(fo_isolated, imported):
    props = resolve(AGREE, imported, {"rater_fields": box_fields(imported)})
    for name in ("solver", "cost", "distance", "threshold", "lsa_thresholds", "diagnostics", "seed"):
        assert len(props[name].view.description or "") > 30, name


def test_a_float_is_keyed_as_a_tile_shows_it():
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.status_colors import app_number

    # FiftyOne 1.22's bubble text: toFixed(3) (toFixed(6) below 0.001), then toLocaleString (<= 3 decimals)
    assert [app_number(v) for v in (1.0, 0.5, 0.51234, 0.5125, -0.25, -0.123456, 0.0, -0.0)] == \
        ["1", "0.5", "0.512", "0.512", "-0.25", "-0.123", "0", "0"]
