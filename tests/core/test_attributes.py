"""Attribute agreement: Krippendorff's published values for his canonical reliability data,
hand-computed small cases (true/false, missing values, edit distance), a COCO file with attributes
from three raters end to end, and the command line's refusals."""

import json
import math

import numpy as np
import pytest

from kalos_core import Annotation, MultiRaterDataset, compute_agreement, make_image
from kalos_core.attributes import AttributeConfig, compute_attributes, group_alpha
from kalos_core.cli import main
from kalos_core.params import ParamError
from kalos_core.reliability import alpha as nominal_alpha

NAN = math.nan
#: Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers x 12
#: units, values 1-5, missing values; published α: nominal .743, ordinal .815, interval .849, ratio .797
CANONICAL = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
                      [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
                      [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
                      [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN]])
PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


def _dataset(matrix, name="v", category=lambda unit: 1):
    """The matrix (raters x units, None/NaN = no value) as labels with ``name`` and the units given:
    label ``r-u`` of rater ``r`` in unit ``u``; every rater draws a label in every unit."""
    anns, attributes, units = [], {}, {}
    for r, row in enumerate(matrix):
        for u, v in enumerate(row):
            lid = f"{r}-{u}"
            anns.append(Annotation(lid, f"r{r}", category(u), (10.0 * u, 0.0, 5.0, 5.0)))
            attributes[lid] = {name: None if isinstance(v, float) and math.isnan(v) else v}
            units[lid] = f"0:{u}"
    raters = [f"r{r}" for r in range(len(matrix))]
    return MultiRaterDataset([make_image(0, 200, 200, raters, anns)], {1: "car", 2: "person"}, "box"), attributes, units


def _alpha(matrix, metric=None, **kw):
    ds, attributes, units = _dataset(matrix, **kw)
    config = AttributeConfig(metrics=(f"v:{metric}",) if metric else None)
    return compute_attributes(ds, attributes, config, units=units).per_attribute["v"]


@pytest.mark.parametrize("metric", list(PUBLISHED))
def test_krippendorffs_canonical_data_give_the_published_alpha(metric):
    got = _alpha(CANONICAL.tolist(), metric)
    assert round(got["alpha"], 3) == PUBLISHED[metric]
    assert got["n_values"] == 40 and got["n_units"] == 11      # unit 12 holds one value: not pairable


def test_nominal_alpha_is_the_agreements_own_nominal_alpha():
    r, u = np.nonzero(~np.isnan(CANONICAL))
    values = CANONICAL[r, u].astype(int)
    mine, n = group_alpha(u, values, np.zeros(12, int), 1, "nominal")
    assert mine[0] == pytest.approx(nominal_alpha(CANONICAL)) and n[0] == 40


def test_booleans_by_hand():
    # units [T,T,T] [T,T,F] [F,F,F] [T,F,-]: n 11, o_TF 2, n_T 6, n_F 5: α = 1 - 10*4 / (2*6*5) = 1/3
    got = _alpha([[True, True, False, True], [True, True, False, False], [True, False, False, None]])
    assert got["metric"] == "nominal" and got["value_type"] == "boolean"
    assert got["alpha"] == pytest.approx(1 / 3)
    assert (got["n_values"], got["n_units"], got["n_disagreeing"]) == (11, 4, 2)
    assert got["disagreeing_units"] == ["0:1", "0:3"]


def test_a_missing_value_is_missing_data_not_disagreement():
    base = [[1, 2, 3, 2], [1, 2, 3, 3]]
    with_gaps = [[1, 2, 3, 2, 7], [1, 2, 3, 3, None], [None, None, None, None, None]]
    a, b = _alpha(base, "interval"), _alpha(with_gaps, "interval")
    assert b["alpha"] == pytest.approx(a["alpha"]) and b["n_values"] == a["n_values"] == 8
    assert b["n_labels"] == 9          # the value 7 is alone in its unit: counted, not pairable


def test_fewer_than_two_pairable_values_give_no_alpha_and_say_why():
    got = _alpha([[1, None], [None, 2]])
    assert got["alpha"] is None and "fewer than 2 pairable values" in got["reason"] and got["n_values"] == 0


def test_all_pairable_values_equal_is_alpha_one():
    assert _alpha([[4, 4], [4, 4]])["alpha"] == 1.0


def test_text_by_edit_distance_by_hand():
    # AB123/AB128 differ by 1 of 5 characters (δ² 0.2); XY9 shares none with either (δ² 1).
    # n 6, n_c: AB123 3, AB128 1, XY9 2; Σ o δ² = 2 * 0.2; Σ n_c n_k δ² = 2 * (3*0.2 + 3*2 + 1*2) = 17.2
    texts = [["AB123", "AB123", "XY9"], ["AB123", "AB128", "XY9"]]
    assert _alpha(texts, "levenshtein")["alpha"] == pytest.approx(1 - 5 * 0.4 / 17.2)
    assert _alpha(texts)["alpha"] == pytest.approx(1 - 5 * 2 / 22)      # exact match: nominal
    assert _alpha(texts)["n_disagreeing"] == 1


def test_levenshtein_on_single_characters_is_nominal():
    letters = [[None if math.isnan(v) else "abcde"[int(v) - 1] for v in row] for row in CANONICAL]
    assert _alpha(letters, "levenshtein")["alpha"] == pytest.approx(_alpha(CANONICAL.tolist(), "nominal")["alpha"])


def test_per_class_uses_the_units_most_frequent_class():
    got = _alpha([[1, 1, 5, 5], [1, 2, 5, 5]], "interval", category=lambda u: 1 if u < 2 else 2)
    assert set(got["per_class"]) == {"car", "person"}
    assert got["per_class"]["person"]["alpha"] == 1.0 and got["per_class"]["car"]["disagreeing_units"] == ["0:1"]
    assert got["per_class"]["car"]["n_values"] == 4


def test_bad_metrics_and_values_are_refused_naming_them():
    with pytest.raises(ParamError, match="unknown metric 'cosine'") as e:
        AttributeConfig(metrics=("pose:cosine",))
    assert e.value.param == "metrics"
    with pytest.raises(ParamError, match="attribute:metric"):
        AttributeConfig(metrics=("ordinal",))
    ds, attributes, units = _dataset([["red", "blue"], ["red", "red"]])
    with pytest.raises(ValueError, match="'v' \\(interval\\) needs numbers; label '0-0' holds 'red'"):
        compute_attributes(ds, attributes, AttributeConfig(metrics=("v:interval",)), units=units)
    with pytest.raises(ValueError, match="no label carries the attribute 'size'; the labels carry: v"):
        compute_attributes(ds, attributes, AttributeConfig(names=("size",)), units=units)


# -- a COCO file with attributes, three raters, end to end ---------------------------------------

def _ann(aid, image, rater, cat, box, **attributes):
    return {"id": aid, "image_id": image, "rater_id": rater, "category_id": cat, "bbox": box, "area": box[2] * box[3],
            "iscrowd": 0, "attributes": {"rotation": 0.0, **attributes}}


def coco_with_attributes():
    """Image 1: a car (a, b, c) and a person (a, b, c); image 2: a car by a and b, another car by c
    alone. Attributes as CVAT's COCO export writes them (``occluded``, ``rotation`` and the label's own)."""
    anns = [_ann(1, 1, "a", 1, [10, 10, 50, 50], occluded=False, colour="red"),
            _ann(2, 1, "b", 1, [11, 10, 50, 50], occluded=False, colour="red"),
            _ann(3, 1, "c", 1, [10, 11, 50, 50], occluded=True, colour="red"),
            _ann(4, 1, "a", 2, [100, 100, 40, 80], occluded=True, colour="blue"),
            _ann(5, 1, "b", 2, [101, 100, 40, 80], occluded=True, colour="blue"),
            _ann(6, 1, "c", 2, [100, 101, 40, 80], occluded=True),
            _ann(7, 2, "a", 1, [20, 20, 60, 40], occluded=False, colour="grey"),
            _ann(8, 2, "b", 1, [20, 21, 60, 40], occluded=False, colour="red"),
            _ann(9, 2, "c", 1, [200, 200, 30, 30], occluded=False, colour="red")]
    return {"images": [{"id": i, "file_name": f"{i}.jpg", "width": 320, "height": 320, "rater_list": ["a", "b", "c"]}
                       for i in (1, 2)],
            "annotations": anns, "categories": [{"id": 1, "name": "car"}, {"id": 2, "name": "person"}]}


def test_a_coco_file_with_attributes_by_hand(tmp_path, capsys):
    path, out = tmp_path / "labels.json", tmp_path / "attributes.json"
    path.write_text(json.dumps(coco_with_attributes()))
    assert main(["attributes", str(path), "--task", "bbox", "--output", str(out)]) == 0
    assert "occluded" in capsys.readouterr().out
    got = json.loads(out.read_text())
    assert got["units_from"] == "matched" and got["n_units"] == 3 and "attribute_alpha" in got["conventions"]
    occ, colour, rotation = (got["per_attribute"][k] for k in ("occluded", "colour", "rotation"))
    # occluded: units [F,F,T] [T,T,T] [F,F]: n 8, o_FT 1, n_F = n_T = 4: α = 1 - 7*2 / (2*4*4)
    assert occ["alpha"] == pytest.approx(1 - 14 / 32) and occ["n_values"] == 8 and occ["n_labels"] == 9
    # colour: [r,r,r] [b,b,-] [g,r]: n 7, n_c 4/2/1: α = 1 - 6*2 / (49 - 21)
    assert colour["alpha"] == pytest.approx(1 - 12 / 28) and colour["n_values"] == 7
    assert rotation["metric"] == "interval" and rotation["alpha"] == 1.0
    unit_of = compute_agreement(__import__("kalos_core").load_coco(path)).unit_of
    assert occ["disagreeing_units"] == [unit_of[1]] and colour["disagreeing_units"] == [unit_of[7]]
    # per class: car [F,F,T] [F,F]: n 5, n_F 4, n_T 1, o_FT 1: α = 1 - 4*2/(2*4*1) = 0; person all equal
    assert occ["per_class"]["car"]["alpha"] == pytest.approx(0.0) and occ["per_class"]["person"]["alpha"] == 1.0
    assert colour["per_class"]["car"]["alpha"] == pytest.approx(0.0)


def test_given_units_give_what_the_matching_gives(tmp_path):
    from kalos_core import load_coco

    ds = load_coco(coco_with_attributes())
    attributes = {a["id"]: a["attributes"] for a in coco_with_attributes()["annotations"]}
    matched = compute_attributes(ds, attributes)
    given = compute_attributes(ds, attributes, units=dict(compute_agreement(ds).unit_of))
    assert given.units_from == "given" and given.per_attribute == matched.per_attribute


@pytest.mark.parametrize("args, message", [
    (["--metrics", "size:nominal"], "no label carries the attribute 'size'"),
    (["--metrics", "colour:cosine"], "unknown metric 'cosine'"),
    (["--attributes", "colour", "--metrics", "occluded:nominal"], "'occluded' is not among the attributes compared"),
])
def test_the_command_line_refuses_bad_input_in_one_line(tmp_path, capsys, args, message):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(coco_with_attributes()))
    assert main(["attributes", str(path), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and message in err and "\n" not in err


def test_a_file_without_attributes_is_refused_naming_it(tmp_path, capsys):
    data = coco_with_attributes()
    for a in data["annotations"]:
        del a["attributes"]
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(data))
    assert main(["attributes", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and str(path) in err and "no annotation carries" in err and "\n" not in err
