"""The ``consensus`` and ``variations`` commands: flags, JSON keys, exit codes."""

import json

from kalos_core.cli import main
from kalos_core.consensus import ConsensusConfig


def three_rater_file(tmp_path):
    images = [{"id": 1, "width": 100, "height": 100, "rater_list": ["a", "b", "c"]},
              {"id": 2, "width": 100, "height": 100, "rater_list": ["a", "b", "c"]}]
    anns = [
        # image 1: a, b say cat, c says dog at the same place; a alone at (50, 50)
        {"id": 1, "image_id": 1, "category_id": 1, "rater_id": "a", "bbox": [0, 0, 10, 10]},
        {"id": 2, "image_id": 1, "category_id": 1, "rater_id": "b", "bbox": [1, 0, 10, 10]},
        {"id": 3, "image_id": 1, "category_id": 2, "rater_id": "c", "bbox": [0, 1, 10, 10]},
        {"id": 4, "image_id": 1, "category_id": 1, "rater_id": "a", "bbox": [50, 50, 10, 10]},
        # image 2: three raters, three classes (a tie)
        {"id": 5, "image_id": 2, "category_id": 1, "rater_id": "a", "bbox": [0, 0, 10, 10]},
        {"id": 6, "image_id": 2, "category_id": 2, "rater_id": "b", "bbox": [0, 0, 10, 10]},
        {"id": 7, "image_id": 2, "category_id": 3, "rater_id": "c", "bbox": [0, 0, 10, 10]},
    ]
    p = tmp_path / "in.json"
    p.write_text(json.dumps({"images": images, "annotations": anns, "categories": [
        {"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}, {"id": 3, "name": "cow"}]}))
    return p


def test_consensus_writes_plain_coco_with_unit_support_raters_and_ties(tmp_path, capsys):
    out = tmp_path / "consensus.json"
    rc = main(["consensus", str(three_rater_file(tmp_path)), "--task", "bbox", "--threshold", "0.5",
               "--support", "0.5", "--output", str(out)])
    assert rc == 0 and "review queue 2 units" in capsys.readouterr().out
    d = json.loads(out.read_text())
    assert set(d) == {"images", "annotations", "categories", "review"}
    (ann,) = d["annotations"]
    assert ann["category_id"] == 1 and abs(ann["score"] - 2 / 3) < 1e-12 and ann["support"] == 2
    assert ann["raters"] == ["a", "b"] and ann["tie"] is False and ann["bbox"] == [0.5, 0.0, 10.0, 10.0]
    assert ann["unit"].startswith("1:")
    review = {r["members"][0]: r for r in d["review"]}
    assert review[4]["support"] == 1 and review[4]["tie"] is False
    assert review[5]["tie"] is True and review[5]["votes"] == {"1": 1, "2": 1, "3": 1}
    # a lower support level lets the tie through, flagged and without a guessed class
    rc = main(["consensus", str(three_rater_file(tmp_path)), "--support", "0.0", "--output", str(out)])
    tied = [a for a in json.loads(out.read_text())["annotations"] if a["tie"]]
    assert rc == 0 and len(tied) == 1 and tied[0]["category_id"] is None and tied[0]["tied_categories"] == [1, 2, 3]


def test_consensus_output_is_written_from_the_columns(tmp_path, capsys, monkeypatch):
    """The command makes no ConsensusLabel (summary and file from the columns); the file is
    json.dumps(to_coco, indent=1) of the same run, byte for byte."""
    from kalos_core.consensus import compute_consensus
    from kalos_core.consensus.labels import LabelColumns
    from kalos_core.io.coco import load_coco

    data = load_coco(three_rater_file(tmp_path))
    want = json.dumps(compute_consensus(data, config=ConsensusConfig(support=0.0)).to_coco(data), indent=1)

    def refuse(self):
        raise AssertionError("label objects made on the command's path")
    monkeypatch.setattr(LabelColumns, "objects", refuse)
    out = tmp_path / "consensus.json"
    assert main(["consensus", str(three_rater_file(tmp_path)), "--support", "0.0", "--output", str(out)]) == 0
    assert "consensus labels 3   ties 1   review queue 0 units" in capsys.readouterr().out
    assert out.read_text() == want


def test_variations_writes_counts_by_rater_and_by_class(tmp_path):
    out = tmp_path / "variations.json"
    rc = main(["variations", str(three_rater_file(tmp_path)), "--task", "bbox", "--thresholds", "0.5,0.75",
               "--include-labels", "--output", str(out)])
    assert rc == 0
    d = json.loads(out.read_text())
    types = ["agreed", "merged", "wrong_class", "merged_wrong_class", "missed", "additional"]
    assert set(d["counts"]) == {"0.5", "0.75"} and list(d["counts"]["0.5"]) == types
    assert d["counts"]["0.5"]["agreed"] == 2 and d["counts"]["0.5"]["wrong_class"] == 4
    assert d["by_rater"]["0.5"]["a"]["additional"] == 1
    assert d["by_class"]["0.5"]["cow"]["wrong_class"] == 1
    assert d["labels"]["4"]["type"] == "additional" and d["labels"]["1"]["partner"] == 2
    assert d["config"]["threshold"] == 0.5


def test_bad_input_exits_with_two(tmp_path, capsys):
    missing = tmp_path / "nope.json"
    assert main(["variations", str(missing)]) == 2
    assert main(["consensus", str(missing)]) == 2
