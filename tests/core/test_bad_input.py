"""Bad input is refused naming the ids at fault, or coerced with a counted warning (docs/input.md).

One test per class of problem, each parametrised over many bad inputs; the same
mutations are applied to a small hand-made file (always) and to the LVIS file
(when present).
"""

import copy
import json
import math

import numpy as np
import pytest

from kalos_core import AgreementConfig, compute_agreement, load_coco
from kalos_core.io import InvalidInputError, load_yolo, read_json, validate_dataset
from kalos_core.io.records import rle_problem
from kalos_core.reliability import alpha
from tests.core.helpers import small

FAST = AgreementConfig(bootstrap=0, vitality=False, collaboration=False, class_difficulty=False)


@pytest.fixture(params=["small", "lvis"])
def base(request):
    if request.param == "small":
        return small()
    path = request.getfixturevalue("lvis_subset_path")
    return json.loads(path.read_text())


def first_ann(d):
    return d["annotations"][0]


def first_image(d):
    return next(im for im in d["images"] if im["id"] == first_ann(d)["image_id"])


# -- refused: each mutation must name the image and/or annotation at fault ------------------------
REJECT = {
    "width string": (lambda d: first_image(d).update(width="wide"), "bbox", "image", "width"),
    "width 0": (lambda d: first_image(d).update(width=0), "bbox", "image", "width must be positive"),
    "width 0 segm": (lambda d: first_image(d).update(width=0), "segm", "image", "width must be positive"),
    "height negative": (lambda d: first_image(d).update(height=-5), "bbox", "image", "height must be positive"),
    "height nan": (lambda d: first_image(d).update(height=float("nan")), "bbox", "image", "non-finite"),
    "width huge": (lambda d: first_image(d).update(width=1e308), "bbox", "image", "beyond"),
    "width bool": (lambda d: first_image(d).update(width=True), "bbox", "image", "width"),
    "bbox nan": (lambda d: first_ann(d).update(bbox=[float("nan"), 0, 5, 5]), "bbox", "ann", "non-finite"),
    "bbox inf": (lambda d: first_ann(d).update(bbox=[0, 0, float("inf"), 5]), "bbox", "ann", "non-finite"),
    "bbox 1e308": (lambda d: first_ann(d).update(bbox=[1e308, 1e308, 1e308, 1e308]), "bbox", "ann", "beyond"),
    "bbox three": (lambda d: first_ann(d).update(bbox=[0, 0, 5]), "bbox", "ann", "bbox must be"),
    "bbox word": (lambda d: first_ann(d).update(bbox=[0, 0, "five", 5]), "bbox", "ann", "five"),
    "bbox zero": (lambda d: first_ann(d).update(bbox=[0, 0, 0, 5]), "bbox", "ann", "non-positive"),
    "bbox tiny": (lambda d: first_ann(d).update(bbox=[0, 0, 1e-200, 1e-200]), "bbox", "ann", "too small"),
    "bbox missing": (lambda d: first_ann(d).pop("bbox"), "bbox", "ann", "no 'bbox'"),
    "category 1.9": (lambda d: first_ann(d).update(category_id=1.9), "bbox", "ann", "integer"),
    "category word": (lambda d: first_ann(d).update(category_id="cat"), "bbox", "ann", "category_id"),
    "category missing": (lambda d: first_ann(d).pop("category_id"), "bbox", "ann", "category_id"),
    "category unknown": (lambda d: first_ann(d).update(category_id=987654), "bbox", "ann", "unknown category_id"),
    "category bool": (lambda d: first_ann(d).update(category_id=True), "bbox", "ann", "category_id"),
    "ann id missing": (lambda d: first_ann(d).pop("id"), "bbox", "image", "annotation id is missing"),
    "ann id float": (lambda d: first_ann(d).update(id=1.5), "bbox", "image", "annotation id must be"),
    "ann id 1 vs '1'": (lambda d: d["annotations"][1].update(id=str(first_ann(d)["id"])), "bbox", "image",
                        "same id written two ways"),
    "ann id dup": (lambda d: d["annotations"][1].update(id=first_ann(d)["id"]), "bbox", "image", "duplicate"),
    "image id 1 vs '1'": (lambda d: d["images"].append({**first_image(d), "id": str(first_image(d)["id"])}),
                          "bbox", "image", "same id written two ways"),
    "image id dup": (lambda d: d["images"].append(dict(first_image(d))), "bbox", "image", "duplicate image id"),
    "image id missing": (lambda d: d["images"].append({"width": 5, "height": 5, "rater_list": ["a"]}),
                         "bbox", None, "image id is missing"),
    "image_id as text": (lambda d: first_ann(d).update(image_id=str(first_ann(d)["image_id"])), "bbox", "ann",
                         "refers to no image"),
    "rater_list string": (lambda d: first_image(d).update(rater_list="ab"), "bbox", "image", "rater_list must be"),
    "rater_list nulls": (lambda d: first_image(d).update(rater_list=[None, "a"]), "bbox", "image", "rater ids"),
    "rater missing": (lambda d: first_ann(d).pop("rater_id"), "bbox", "ann", "rater_id"),
    "rater outside": (lambda d: first_ann(d).update(rater_id="zed"), "bbox", "ann", "not in the image's rater_list"),
    "image not object": (lambda d: d["images"].append("img"), "bbox", None, "images["),
    "ann not object": (lambda d: d["annotations"].append(7), "bbox", None, "annotations["),
    "category without id": (lambda d: d["categories"].append({"name": "x"}), "bbox", None, "has no 'id'"),
    "category id dup": (lambda d: d["categories"].append(dict(d["categories"][0])), "bbox", None, "duplicate"),
    "polygon short": (lambda d: first_ann(d).update(segmentation=[[0, 0, 5, 5]]), "segm", "ann", "fewer than 3"),
    "polygon zero area": (lambda d: first_ann(d).update(segmentation=[[0, 0, 5, 0, 10, 0]]), "segm", "ann",
                          "no area inside the image"),
    "polygon point": (lambda d: first_ann(d).update(segmentation=[[3, 3, 3, 3, 3, 3]]), "segm", "ann", "no area inside the image"),
    "polygon nan": (lambda d: first_ann(d).update(segmentation=[[0, 0, 5, float("nan"), 5, 5]]), "segm", "ann",
                    "non-finite"),
    "polygon nested": (lambda d: first_ann(d).update(segmentation=[[[0, 0], [5, 0], [5, 5]]]), "segm", "ann",
                       "number"),
    "segm missing": (lambda d: first_ann(d).pop("segmentation"), "segm", "ann", "segmentation"),
    "rle malformed": (lambda d: first_ann(d).update(segmentation={"counts": 5, "size": [first_image(d)["height"],
                      first_image(d)["width"]]}), "segm", "ann", "RLE counts"),
    "rle short": (lambda d: first_ann(d).update(segmentation={"counts": [0, 10], "size": [first_image(d)["height"],
                                                first_image(d)["width"]]}), "segm", "ann", "cover 10 pixels"),
    "rle bad string": (lambda d: first_ann(d).update(segmentation={"counts": "\x7f\x7f", "size": [
                       first_image(d)["height"], first_image(d)["width"]]}), "segm", "ann", "malformed"),
    "rle wrong size": (lambda d: first_ann(d).update(segmentation={"counts": [4], "size": [2, 2]}), "segm", "ann",
                       "differs from the image"),
    "rle huge image": (lambda d: (first_image(d).update(width=10**6, height=10**6), first_ann(d).update(
                       segmentation={"counts": [10**12], "size": [10**6, 10**6]})), "segm", "image", "too large"),
    "rle no size": (lambda d: first_ann(d).update(segmentation={"counts": [4]}), "segm", "ann", "'size'"),
}


@pytest.mark.parametrize("case", sorted(REJECT))
def test_bad_values_are_refused_naming_the_culprit(base, case):
    mutate, task, who, fragment = REJECT[case]
    d = copy.deepcopy(base)
    ann_id, image_id = first_ann(d).get("id"), first_image(d)["id"]
    mutate(d)
    with pytest.raises(InvalidInputError) as err:
        load_coco(d, task)
    text = str(err.value)
    assert fragment in text
    if who == "image":
        assert f"image {image_id}" in text
    if who == "ann":
        assert f"annotation {ann_id}" in text and f"image {image_id}" in text
    # skipping drops what was refused, counts it, and the rest still measures
    if case not in ("width 0 segm",):
        ds = load_coco(d, task, skip_invalid=True)
        assert len(ds.skipped) >= 1


@pytest.mark.parametrize("raw, fragment", [
    ([], "not list"), (None, "not null"), (3, "not int"), (["images"], "not list"),
    ({"images": []}, "no 'annotations'"), ({"images": {}, "annotations": []}, "'images' must be a list"),
    ({"images": [], "annotations": "x"}, "'annotations' must be a list"),
    ({"images": [], "annotations": [], "categories": {"1": "a"}}, "'categories' must be a list"),
])
def test_json_of_the_wrong_shape_is_refused(raw, fragment):
    with pytest.raises(InvalidInputError) as err:
        load_coco(raw)
    assert fragment in str(err.value)


@pytest.mark.parametrize("payload, fragment", [
    (b"", "empty"), (b"  \n", "empty"), (b"{not json", "not valid JSON"), (b"[" * 100000 + b"]" * 100000, "nested"),
    ('{"images": [], "x": "caf\u00e9"}'.encode("latin-1"), "not UTF-8"),
])
def test_unreadable_files_are_one_line_errors(tmp_path, payload, fragment):
    p = tmp_path / "in.json"
    p.write_bytes(payload)
    with pytest.raises(InvalidInputError) as err:
        read_json(p)
    assert fragment in str(err.value) and str(p) in str(err.value)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32"])
def test_utf16_utf32_and_bom_files_read_like_utf8(tmp_path, encoding):
    p = tmp_path / "in.json"
    p.write_text(json.dumps(small()), encoding=encoding)
    assert load_coco(p).n_annotations == 4


# -- coerced with a counted warning ----------------------------------------------------------------
COERCE = {
    "width as text": (lambda d: first_image(d).update(width=str(first_image(d)["width"])), "bbox",
                      "numbers written as strings"),
    "bbox as text": (lambda d: first_ann(d).update(bbox=[str(v) for v in first_ann(d)["bbox"]]), "bbox",
                     "numbers written as strings"),
    "polygon as text": (lambda d: first_ann(d).update(segmentation=[[str(v) for v in r] for r in
                                                                    first_ann(d)["segmentation"]]), "segm",
                        "numbers written as strings"),
    "category as text": (lambda d: first_ann(d).update(category_id=str(first_ann(d)["category_id"])), "bbox",
                         "category id"),
    "category as 1.0": (lambda d: first_ann(d).update(category_id=float(first_ann(d)["category_id"])), "bbox",
                        "category id"),
    "rater listed twice": (lambda d: first_image(d).update(rater_list=first_image(d)["rater_list"] * 2), "bbox",
                           "listed twice"),
    "size missing": (lambda d: [im.pop(k) for im in d["images"] for k in ("width", "height")], "bbox",
                     "size taken from the extent"),
}


@pytest.mark.parametrize("case", sorted(COERCE))
def test_coercions_give_the_same_alpha_and_a_counted_warning(base, case):
    mutate, task, fragment = COERCE[case]
    d = copy.deepcopy(base)
    clean = compute_agreement(load_coco(copy.deepcopy(d), task), FAST)
    mutate(d)
    res = compute_agreement(load_coco(d, task), FAST)
    assert res.mean_alpha == pytest.approx(clean.mean_alpha)      # read as meant: same numbers
    assert res.global_alpha == pytest.approx(clean.global_alpha)
    hits = [w for w in res.to_dict()["warnings"] if fragment in w["message"]]
    assert hits and hits[0]["count"] >= 1


def test_one_rle_without_sizes_does_not_shrink_polygons_to_one_pixel():
    d = small()
    for im in d["images"]:
        im.pop("width"), im.pop("height")
    d["annotations"][2]["segmentation"] = {"counts": [0, 50 * 100], "size": [50, 100]}  # a full 50 x 100 mask
    ds = load_coco(d, "segm")
    assert ds.kind == "rle"
    assert (ds.images[0].width, ds.images[0].height) == (11.0, 10.0)     # the polygons' extent, not 1 x 1
    assert (ds.images[1].width, ds.images[1].height) == (100.0, 50.0)    # the RLE's size
    res = compute_agreement(ds, FAST)
    assert res.per_image_alpha["1"] == 1.0                              # 0..10 vs 1..11: IoU 0.82 matches
    assert any("rasterised" in w["message"] for w in res.warnings)


def test_keypoints_of_different_skeletons_are_refused():
    d = small()
    for a in d["annotations"]:
        a["keypoints"] = [5, 5, 2] * 17
    d["annotations"][1]["keypoints"] = [5, 5, 2] * 15
    d["annotations"].append({**d["annotations"][0], "id": 14, "image_id": 2})
    with pytest.raises(InvalidInputError, match="annotation 11.*15 keypoints.*17"):
        load_coco(d, "keypoints")
    d["annotations"][1]["keypoints"] = [5, 5, 7] * 17
    with pytest.raises(InvalidInputError, match="visibility"):
        load_coco(d, "keypoints")


@pytest.mark.parametrize("rle, ok", [
    ({"counts": [0, 6], "size": [2, 3]}, True), ({"counts": "06", "size": [2, 3]}, True),
    ({"counts": [0, 5], "size": [2, 3]}, False), ({"counts": [0, 7], "size": [2, 3]}, False),
    ({"counts": [-1, 7], "size": [2, 3]}, False), ({"counts": "0", "size": [2, 3]}, False),
    ({"counts": "0~", "size": [2, 3]}, False), ({"counts": [0, 6], "size": [2, 0]}, False),
    ({"counts": [0, 6], "size": "2x3"}, False), ({"counts": None, "size": [2, 3]}, False),
])
def test_rle_counts_must_cover_the_mask_exactly(rle, ok):
    assert (rle_problem(rle) is None) is ok


def test_compressed_rle_strings_of_pycocotools_are_accepted():
    from pycocotools import mask as mask_utils
    m = np.zeros((40, 30), np.uint8, order="F")
    m[5:20, 3:17] = 1
    rle = mask_utils.encode(m)
    assert rle_problem(rle) is None and rle_problem({**rle, "counts": rle["counts"].decode()}) is None
    assert rle_problem({**rle, "counts": rle["counts"][:-2]}) is not None


# -- nothing to measure, single raters -----------------------------------------------------------
@pytest.mark.parametrize("data", [
    {"images": [], "annotations": [], "categories": []},
    {"images": [{"id": 1, "width": 5, "height": 5, "rater_list": ["a"]}], "annotations": []},
    {"images": [{"id": 1, "width": 5, "height": 5, "rater_list": []}], "annotations": []},
])
def test_nothing_to_measure_is_said_not_scored_1(data):
    with pytest.raises(InvalidInputError, match="nothing to measure"):
        compute_agreement(load_coco(data), FAST)


def test_images_without_annotations_or_with_one_rater_are_flagged():
    d = small()
    d["annotations"] = []
    d["images"].append({"id": 3, "width": 5, "height": 5, "rater_list": ["a"]})
    res = compute_agreement(load_coco(d), FAST)
    text = " ".join(w["message"] for w in res.warnings)
    assert "no annotations at all" in text and "fewer than two raters" in text


# -- configs -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [
    {"threshold": -1}, {"threshold": 1.5}, {"threshold": math.nan}, {"threshold": "0.5"}, {"threshold": True},
    {"bootstrap": -1}, {"bootstrap": 2.5}, {"confidence": 0}, {"confidence": 1}, {"confidence": math.nan},
    {"seed": -1}, {"seed": 1.5}, {"lsa_thresholds": (0.1, 2)}, {"lsa_thresholds": "0.1,0.5"},
    {"lsa_thresholds": (math.nan,)}, {"distance": "nope"}, {"solver": "nope"}, {"cost": "nope"},
    {"vitality": "yes"}, {"max_diagnostic_raters": -3},
])
def test_agreement_config_refuses_bad_values_up_front(kwargs):
    with pytest.raises(ValueError, match="(?i)" + next(iter(kwargs)).split("_")[0]):
        AgreementConfig(**kwargs)


def test_distance_of_another_label_kind_fails_before_matching():
    with pytest.raises(ValueError, match="'oks' is a distance for keypoints"):
        compute_agreement(load_coco(small()), AgreementConfig(distance="oks", bootstrap=0))


@pytest.mark.parametrize("kwargs", [
    {"seed": -1}, {"bootstrap": -2}, {"bootstrap": 1.5}, {"confidence": 1.2}, {"stratify": "no"},
    {"distances": "iou"}, {"distances": ()}, {"grid_points": 3},
])
def test_calibration_config_refuses_bad_values(kwargs):
    from kalos_core.calibration import CalibrationConfig
    with pytest.raises(ValueError):
        CalibrationConfig(**kwargs)


@pytest.mark.parametrize("matrix", [[[1.9, 2.0], [1.0, 2.0]], [[np.inf, 1.0], [1.0, 1.0]], [1.0, 2.0]])
def test_alpha_refuses_non_integer_codes_instead_of_truncating(matrix):
    with pytest.raises(ValueError):
        alpha(np.array(matrix))


def test_many_raters_on_one_image_compute_alpha_and_skip_the_cubic_diagnostics_there_with_a_warning():
    from kalos_core import Annotation, MultiRaterDataset, make_image
    raters = [f"r{k:04d}" for k in range(1000)]
    anns = [Annotation(k, r, 1, (k % 7, 0, 50, 50)) for k, r in enumerate(raters)]
    few = [Annotation(f"f{k}", r, 1, (0, 0, 50, 50)) for k, r in enumerate(("a", "b", "c"))]
    ds = MultiRaterDataset([make_image(1, 100, 100, raters, anns), make_image(2, 100, 100, ("a", "b", "c"), few)],
                           {1: "a"}, "box")
    res = compute_agreement(ds, AgreementConfig(bootstrap=0))
    assert res.mean_alpha == 1.0 and res.per_image_alpha == {"1": 1.0, "2": 1.0}
    skipped = {w["message"].split()[0]: w for w in res.warnings if "skipped on images" in w["message"]}
    assert set(skipped) == {"vitality", "collaboration"}
    for w in skipped.values():
        assert "more than 100 raters" in w["message"] and "--max-diagnostic-raters" in w["message"]
        assert w["count"] == 1 and w["examples"] == ["image 1 (1000 raters)"]
    # the image under the limit still has its diagnostics: each of its three raters, each pair
    assert res.vitality == {"a": 0.0, "b": 0.0, "c": 0.0}
    assert res.collaboration["a"]["b"] == 1.0 and "r0001" not in res.collaboration["r0000"]
    quiet = compute_agreement(ds, AgreementConfig(bootstrap=0, vitality=False, collaboration=False))
    assert quiet.mean_alpha == 1.0 and not [w for w in quiet.warnings if "skipped on images" in w["message"]]


# -- the reusable check for records built elsewhere (the FiftyOne adapter) ---------------------------
def test_validate_dataset_checks_records_built_without_a_reader():
    from kalos_core import Annotation, MultiRaterDataset, make_image
    good = Annotation("x", "a", 1, (0, 0, 5, 5))
    ds = MultiRaterDataset([make_image("s1", 1, 1, ["a", "b"], [good, Annotation("y", "b", 1.0, (0, 0, 5, 5)),
                                                                  Annotation("z", "b", 1, (0, math.nan, 5, 5))])],
                           {1: "a"}, "box")
    with pytest.raises(InvalidInputError, match="image s1, annotation z"):
        validate_dataset(ds)
    clean = validate_dataset(ds, skip_invalid=True)
    assert clean.n_annotations == 2 and clean.skipped[0]["annotation_id"] == "z"
    assert clean.images[0].annotations[1].category == 1 and clean.warnings[0]["count"] == 1


# -- YOLO ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line, fragment", [
    ("nan 0.5 0.5 0.2 0.2", "class id"), ("-1 0.5 0.5 0.2 0.2", "class id"), ("0.5 0.5 0.5 0.2 0.2", "class id"),
    ("0 0.5 0.5 0.2", "5 numbers"), ("0 0.5 0.5 0.2 0.2 0.9", "6 fields"), ("0 0.1 0.2 0.3 0.4 0.5 0.6 0.7", "fields"),
    ("0 320 240 50 50", "relative"), ("0 0.5 0.5 inf 0.2", "relative"), ("0 0.5 0.5 0 0.2", "non-positive"),
    ("0 a b c d", "5 numbers"),
])
def test_yolo_lines_are_refused_with_file_and_line(tmp_path, line, fragment):
    for r in ("alice", "bob"):
        (tmp_path / r).mkdir()
        (tmp_path / r / "img1.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    (tmp_path / "bob" / "img1.txt").write_text(f"0 0.5 0.5 0.2 0.2\n{line}\n")
    with pytest.raises(InvalidInputError) as err:
        load_yolo(tmp_path)
    assert fragment in str(err.value) and "line 2 of bob/img1.txt" in str(err.value)
    assert load_yolo(tmp_path, skip_invalid=True).n_annotations == 2
