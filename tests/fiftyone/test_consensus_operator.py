"""build_consensus and tag_for_review on a real database: known answers on three raters, the
raters' fields untouched, form errors, overwrite, the review list, tags and the saved view."""

import uuid

import bson
import pytest
from tests.fiftyone.helpers import THREE_RATER_FIELDS as FIELDS, form_errors as errors, resolved_form as form, run_operator as execute, three_raters

PLUGIN = "@kalos/agreement"
def raw(ds, fields):
    """The stored documents of ``fields``, as BSON bytes per sample."""
    coll = ds._sample_collection
    return [bson.encode({f: doc.get(f) for f in fields}) for doc in coll.find({}, {f: 1 for f in fields})]


@pytest.fixture()
def ds(fo_isolated):
    return three_raters(fo_isolated)


def test_consensus_majority_class_confidence_and_review(ds):
    before = raw(ds, FIELDS)
    execute("build_consensus", ds, agreement_key="kalos")
    assert raw(ds, FIELDS) == before  # the raters' fields are byte-identical
    assert "kalos_consensus" in ds.list_runs()
    s1, s2 = ds.values("kalos_consensus.detections")
    assert len(s1) == 1
    lab = s1[0]
    assert lab.label == "A" and lab.confidence == pytest.approx(2 / 3)
    assert lab.support == 2 and lab.n_assigned == 3 and sorted(lab.raters) == ["r1", "r2"]
    assert lab.tie is False and len(lab.members) == 3
    # median of the two agreeing boxes, in relative coordinates
    assert lab.bounding_box == pytest.approx([0.11, 0.10, 0.30, 0.31])
    assert sorted(x.label for x in s2) == ["A", "B"] and all(x.confidence == 1.0 for x in s2)
    res = ds.load_run_results("kalos_consensus")
    assert res.n_labels == 3 and res.n_review == 1
    (item,) = res.review
    assert item["support"] == 1 and item["raters"] == ["r1"] and item["votes"] == {"A": 1}
    r1_ids = ds.values("raters_r1.detections.id")[0]
    assert item["members"] == [r1_ids[1]]


def resaved(labels) -> dict:
    """``labels`` as FiftyOne's own classes store them (read back as the database returns them)."""
    return bson.decode(bson.encode(labels.to_mongo().to_dict()))


def test_consensus_labels_are_stored_as_fiftyone_stores_them(ds):
    """The bulk write's documents are what FiftyOne's own classes serialise (loaded and re-saved:
    no key, type or value differs), the field is declared as Detections, live samples see them."""
    live = ds.first()
    execute("build_consensus", ds, agreement_key="kalos")
    docs = [d["kalos_consensus"] for d in ds._sample_collection.find({}, {"kalos_consensus": 1})]
    assert [len(d["detections"]) for d in docs] == [1, 2]
    for doc, sample in zip(docs, ds):
        assert doc == resaved(sample.kalos_consensus)
        assert {type(v) for d in doc["detections"] for v in (d["support"], d["n_assigned"])} == {int}
    assert ds.get_field("kalos_consensus").document_type.__name__ == "Detections"
    assert len(live.kalos_consensus.detections) == 1      # an in-memory sample is reloaded


def test_consensus_support_all_and_weighted(ds):
    execute("build_consensus", ds, agreement_key="kalos", support=1.0, box_fusion="weighted")
    s1, s2 = ds.values("kalos_consensus.detections")
    assert s1 == [] and len(s2) == 2  # 2 of 3 is not all
    assert ds.load_run_results("kalos_consensus").n_review == 2


def test_consensus_form_errors_and_overwrite(ds, fo_isolated):
    assert errors(form("build_consensus", ds, agreement_key="kalos")) == {}
    assert "support" in errors(form("build_consensus", ds, agreement_key="kalos", box_fusion="x", support=3.0)) or \
        "box_fusion" in errors(form("build_consensus", ds, agreement_key="kalos", box_fusion="x"))
    execute("build_consensus", ds, agreement_key="kalos")
    errs = errors(form("build_consensus", ds, agreement_key="kalos"))
    assert "overwrite" in errs and "exists" in errs["overwrite"]
    with pytest.raises(Exception, match="confirm overwriting"):
        execute("build_consensus", ds, agreement_key="kalos")
    execute("build_consensus", ds, agreement_key="kalos", overwrite=True, support=1.0)
    assert ds.load_run_results("kalos_consensus").n_labels == 2
    # a field the plugin did not write is never overwritten
    other = three_raters(fo_isolated)
    other.add_sample_field("kalos_consensus", fo_isolated.StringField)
    assert "agreement_key" in errors(form("build_consensus", other, agreement_key="kalos"))
    # delete_kalos_run removes the field
    execute("delete_kalos_run", ds, run_key="kalos_consensus")
    assert not ds.has_sample_field("kalos_consensus") and "kalos_consensus" not in ds.list_runs()


def test_tag_for_review(ds):
    execute("build_consensus", ds, agreement_key="kalos")
    alpha = ds.values("kalos_alpha")
    assert alpha[0] < alpha[1]
    level = (alpha[0] + alpha[1]) / 2
    before = raw(ds, FIELDS)
    execute("tag_for_review", ds, run_key="kalos", tag="check", alpha_below=level, unsupported=True)
    s1, s2 = ds.select(ds.values("id"))  # two samples
    assert "check" in s1.tags and "check" not in s2.tags
    tagged = {f: [[("check" in (d.tags or [])) for d in row] for row in ds.values(f"{f}.detections")]
              for f in FIELDS}
    # r3's B disagrees on the class with r1/r2's A (all three labels of that unit); r1's lone box is unmatched
    assert tagged["raters_r1"][0] == [True, True] and tagged["raters_r3"][0] == [True]
    assert not any(t for f in FIELDS for t in tagged[f][1])  # sample 2: every unit agreed
    assert ds.has_saved_view("kalos_review")
    view = ds.load_saved_view("kalos_review")
    assert len(view) == 1 and view.count("raters_r1.detections") == 2
    assert raw(ds, FIELDS) != before  # tags went on the labels
    errs = errors(form("tag_for_review", ds, run_key="kalos", tag="", use_alpha=False))
    assert "tag" in errs


def test_tag_for_review_needs_consensus_for_unsupported(ds):
    errs = errors(form("tag_for_review", ds, run_key="kalos", tag="x", unsupported=True))
    assert "unsupported" in errs and "build consensus" in errs["unsupported"]


def test_consensus_stores_every_parameter_with_the_agreement_runs_matching(ds):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.consensus import consensus_run

    execute("build_consensus", ds, agreement_key="kalos", pixel_share=0.7)
    cfg, acfg = ds.get_run_info("kalos_consensus").config, ds.get_run_info("kalos").config
    assert (cfg.threshold, cfg.distance, cfg.solver, cfg.cost) == (acfg.threshold, acfg.distance, acfg.solver, acfg.cost)
    assert (cfg.support, cfg.box_fusion, cfg.pixel_share) == (0.5, "median", 0.7)
    props = form("build_consensus", ds, agreement_key="kalos", overwrite=True)
    assert {"support", "box_fusion", "pixel_share"} <= set(props) and not {"threshold", "solver"} & set(props)
    with pytest.raises(Exception, match="agreement run's"):   # the matching is the agreement run's, not set here
        consensus_run(ds, agreement_key="kalos", overwrite=True, threshold=0.9)


def test_run_dropdowns_fall_back_to_the_newest_run_the_form_shows(ds):
    """The App does not always hand a dynamic form's default to its params: the agreement-run
    dropdown shows the newest run, is not "Required", and the operator then uses that run;
    deleting a run has no default and must be chosen."""
    execute("compute_agreement", ds, rater_fields=FIELDS, run_key="newer", bootstrap=0)
    props = form("build_consensus", ds)
    assert props["agreement_key"].default == "newer" and not props["agreement_key"].required
    assert errors(props) == {}
    execute("build_consensus", ds)                 # no agreement_key in the params
    assert "newer_consensus" in ds.list_runs() and "kalos_consensus" not in ds.list_runs()
    execute("tag_for_review", ds, tag="fallback")  # no run_key: the newest run
    assert ds.load_run_results("newer_consensus") is not None
    assert ds.match_tags("fallback").count() > 0 or ds.count_label_tags().get("fallback", 0) > 0
    delete = form("delete_agreement_run", ds)["run_key"]
    assert delete.required and delete.default is None


def _triggered(res) -> list[str]:
    return [r["operator_uri"] for r in res.executor.to_json()["requests"]]


def test_deleting_a_run_clears_an_app_view_that_uses_its_fields(ds):
    """A view that names the run's fields (its saved disagreement view, a sort by its α) would stop
    the App at "Field ... does not exist" once they are gone: the App goes back to the whole data
    set. Any other view is left as the user chose it."""
    import fiftyone.operators as foo

    execute("browse_disagreements", ds, run_key="kalos")
    sorted_by_alpha = ds.sort_by("kalos_alpha")
    res = foo.execute_operator(f"{PLUGIN}/delete_agreement_run", view=sorted_by_alpha, params={"run_key": "kalos"})
    assert "clear_view" in _triggered(res)
    execute("compute_agreement", ds, rater_fields=FIELDS, run_key="kalos", bootstrap=0)
    execute("browse_disagreements", ds, run_key="kalos")
    res = foo.execute_operator(f"{PLUGIN}/delete_agreement_run", dataset=ds.name,
                               view_name="kalos_disagreements", params={"run_key": "kalos"})
    assert "clear_view" in _triggered(res) and "reload_dataset" in _triggered(res)
    execute("compute_agreement", ds, rater_fields=FIELDS, run_key="kalos", bootstrap=0)
    res = foo.execute_operator(f"{PLUGIN}/delete_agreement_run", view=ds.limit(1), params={"run_key": "kalos"})
    assert "clear_view" not in _triggered(res)


#: the consensus of three_raters in COCO pixels (100 × 100): (file, class, [x, y, w, h])
CONSENSUS_BOXES = [("1.jpg", "A", [11.0, 10.0, 30.0, 31.0]), ("2.jpg", "A", [20.0, 20.0, 40.0, 40.0]),
                   ("2.jpg", "B", [70.0, 10.0, 20.0, 20.0])]


def coco_boxes(path):
    """``(file name, class, bbox)`` of every annotation of a COCO file, sorted."""
    import json
    from pathlib import Path

    coco = json.loads(Path(path).read_text())
    names = {c["id"]: c["name"] for c in coco["categories"]}
    files = {im["id"]: im["file_name"] for im in coco["images"]}
    return sorted((files[a["image_id"]], names[a["category_id"]], [round(v, 6) for v in a["bbox"]])
                  for a in coco["annotations"])


def test_consensus_exported_as_coco(ds, tmp_path):
    """The consensus field through FiftyOne's COCO exporter: known boxes in pixels (100 × 100),
    a tie left out and counted, an existing file never written over."""
    import json

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.errors import SetupError
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.consensus import export_consensus_coco

    path = str(tmp_path / "consensus.json")
    with pytest.raises(SetupError, match="no consensus run 'kalos_consensus'.*runs: none.*build consensus"):
        export_consensus_coco(ds, "kalos_consensus", path)
    execute("build_consensus", ds, agreement_key="kalos")
    out = export_consensus_coco(ds, "kalos_consensus", path)
    assert (out["samples"], out["labels"], out["left_out_ties"]) == (2, 3, 0)
    assert coco_boxes(path) == CONSENSUS_BOXES
    with pytest.raises(SetupError, match="consensus.json exists; choose another path or pass overwrite=True"):
        export_consensus_coco(ds, "kalos_consensus", path)

    sample = ds.first()   # a tie: the class was not guessed, so it has no COCO category
    sample["kalos_consensus"].detections[0].label = None
    sample.save()
    out = export_consensus_coco(ds, "kalos_consensus", path, overwrite=True)
    assert (out["labels"], out["left_out_ties"]) == (2, 1)
    assert len(json.loads(open(path).read())["annotations"]) == 2


def test_consensus_images_of_one_name_in_two_folders_keep_their_relative_paths(ds, tmp_path):
    """cam1/0001.jpg and cam2/0001.jpg: each exported under its path below the common folder, so the
    file reads back unambiguously (both were written 0001.jpg before)."""
    import json

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.consensus import export_consensus_coco

    for sample, cam in zip(ds.sort_by("filepath"), ("cam1", "cam2")):
        sample.filepath = f"/nonexistent/{cam}/0001.jpg"
        sample.save()
    execute("build_consensus", ds, agreement_key="kalos")
    path = str(tmp_path / "consensus.json")
    export_consensus_coco(ds, "kalos_consensus", path)
    names = sorted(im["file_name"] for im in json.loads(open(path).read())["images"])
    assert names == ["cam1/0001.jpg", "cam2/0001.jpg"]


def test_the_export_operator_writes_the_consensus_as_coco_and_ends_with_its_card(ds, tmp_path):
    """The App's export_consensus_coco: form errors (no consensus run yet; an existing file unless
    overwrite), then the COCO file read back: the known consensus boxes in pixels (100 × 100)."""
    import json

    from fiftyone.operators.executor import ExecutionError

    from tests.fiftyone.helpers import check_card, shown_card

    path = tmp_path / "consensus.json"
    assert "No KaLOS consensus run" in str(form("export_consensus_coco", ds)["none"].view.label)
    execute("build_consensus", ds, agreement_key="kalos")
    assert errors(form("export_consensus_coco", ds, labels_path=str(tmp_path))) == {
        "labels_path": f"{tmp_path} is a folder; give the path of a file (consensus.json)"}
    res = execute("export_consensus_coco", ds, consensus_key="kalos_consensus", labels_path=str(path))
    title, rows, results = shown_card(res)
    check_card(title, rows)
    assert results["path"] == str(path) and results["labels"] == 3
    shown = dict(rows)
    assert (shown["Labels written"], shown["Samples"], shown["Tied labels left out (class not guessed)"]) == \
        ("3", "2", "0")
    assert shown["Written"].startswith(f"the COCO file {path}") and shown["Run key"] == "kalos_consensus"
    assert coco_boxes(path) == CONSENSUS_BOXES
    before = path.read_text()
    assert errors(form("export_consensus_coco", ds, labels_path=str(path))) == {
        "labels_path": f"{path} exists; choose another path or pass overwrite=True"}
    with pytest.raises(ExecutionError, match="Path: labels_path. Reason: .* exists; choose another path"):
        execute("export_consensus_coco", ds, consensus_key="kalos_consensus", labels_path=str(path))
    assert path.read_text() == before   # never written over unless asked
    assert not errors(form("export_consensus_coco", ds, labels_path=str(path), overwrite=True))
    execute("export_consensus_coco", ds, labels_path=str(path), overwrite=True)   # the newest consensus run
    assert len(json.loads(path.read_text())["annotations"]) == 3


def test_polygon_consensus_is_an_instance_mask_stored_as_fiftyone_stores_it(fo_isolated):
    """Polylines: the fused polygon becomes a Detection with a mask (FiftyOne's own serialisation)."""
    ds = fo_isolated.Dataset(f"kalos-cons-poly-{uuid.uuid4().hex[:8]}")
    square = [[(0.2, 0.2), (0.6, 0.2), (0.6, 0.6), (0.2, 0.6)]]
    s = fo_isolated.Sample(filepath="/nonexistent/p.jpg", rater_list=["r1", "r2", "r3"],
                           metadata=fo_isolated.ImageMetadata(width=50, height=50))
    for k, f in enumerate(FIELDS):
        shifted = [[(x + 0.02 * k, y) for x, y in square[0]]]
        s[f] = fo_isolated.Polylines(polylines=[fo_isolated.Polyline(label="A", points=shifted, closed=True,
                                                                     filled=True)])
    ds.add_sample(s)
    execute("compute_agreement", ds, rater_fields=FIELDS, run_key="kalos", bootstrap=0)
    execute("build_consensus", ds, agreement_key="kalos")
    (doc,) = [d["kalos_consensus"] for d in ds._sample_collection.find({}, {"kalos_consensus": 1})]
    (lab,) = ds.first().kalos_consensus.detections
    assert doc == resaved(ds.first().kalos_consensus)
    assert lab.label == "A" and lab.support == 3 and lab.mask is not None and lab.mask.any()
    x, y, w, h = lab.bounding_box     # the mask's frame: the fused square, about 20 px wide, from x ≈ 10 px
    assert 0.15 <= x <= 0.25 and 0.35 <= w <= 0.5 and lab.mask.shape == (round(h * 50), round(w * 50))
