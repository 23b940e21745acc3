"""A second round through a real Label Studio server: round 1 is the LVIS r1/r2 boxes of a few images
(imported from the multi-rater COCO file, with blank PNGs of their sizes as the images); the review
view goes to Label Studio through FiftyOne's ``annotate()``; both raters draw their round-1 boxes again
through the API, each with their own account; the round comes back as one field per annotator, and the
round-2 run gives the per-image α of round 1 (the same boxes), image by image.

Skipped (with the reason) without the Label Studio venv or ../shared/data; the server: conftest.py."""

import time

import pytest

from tests.fiftyone.helpers import (
    agreement_of as agreement,
    check_card,
    lvis_subset,
    new_name as name,
    reference,
    resolved_form,
    shown_card,
)
from tests.labelstudio.server import USERS, file_names, post_round1_boxes

pytestmark = [pytest.mark.labelstudio, pytest.mark.realdata]
N_IMAGES = 12


def _round2_agreement(ds, view_name, fields):
    """docs/review.md's call: compute_agreement's Python entry on the round's saved view."""
    import fiftyone.operators as foo

    agree = foo.get_operator("@kalos/agreement/compute_agreement")
    agree(ds.load_saved_view(view_name), rater_fields=fields, run_key="round2", threshold=0.5)
    return ds.load_run_results("round2")


def _preselected(ds, view_name):
    """The rater fields compute_agreement's form proposes with the saved view ``view_name`` open in the App."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    ctx = ExecutionContext({"dataset_name": ds.name, "view_name": view_name, "params": {}})
    return foo.get_operator("@kalos/agreement/compute_agreement").resolve_input(ctx).type.properties[
        "rater_fields"].default


def test_a_second_round_through_label_studio_gives_the_round1_alpha(lvis_subset_path, label_studio,
                                                                    label_studio_sdk, tmp_path, monkeypatch):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.errors import SetupError
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import label_studio_round as lsr
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import (
        import_multirater_coco,
    )
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.review import tag_for_review

    from kalos_core.dic import DICConfig, compare_runs

    data = lvis_subset(lvis_subset_path, N_IMAGES)
    ds = import_multirater_coco(name(), data, placeholders=str(tmp_path / "images"))   # real PNG files
    round1 = agreement(ds, ["raters_r1", "raters_r2"])
    counts = tag_for_review(ds, "kalos", alpha_below=1.0)
    view = ds.load_saved_view(counts["view"])
    sent = set(view.values("id"))
    assert 2 <= len(sent) < N_IMAGES   # the review queue, not the whole set

    classes = lsr.review_classes(ds)
    form = resolved_form("send_to_label_studio", ds)   # the classes in one line (LVIS: hundreds), not a list
    assert "classes" not in form and form["choose_classes"].view.description.replace("\\", "").startswith(
        f"Default: the {len(classes)} classes of the rater fields ({', '.join(classes[:8])}")
    ticked = resolved_form("send_to_label_studio", ds, choose_classes=True)
    assert ticked["classes"].default == classes

    start = time.monotonic()
    sent_op = foo.execute_operator("@kalos/agreement/send_to_label_studio", dataset=ds.name, params={
        "view_name": counts["view"], "anno_key": "round2", "url": label_studio.url, "api_key": USERS["r1"][1]})
    assert sent_op.error is None, sent_op.error
    check_card(*shown_card(sent_op)[:2])   # the card every operator ends with (tests/fiftyone/test_result_cards.py)
    results = ds.load_annotation_results("round2")
    assert sorted(results.uploaded_tasks.values()) == sorted(sent)
    project = label_studio.api("GET", f"/api/projects/{results.project_id}")
    assert project["maximum_annotations"] == 2 and project["task_number"] == len(sent)
    assert project["label_config"].count("<Label ") == len(lsr.review_classes(ds)) > 1   # round 1's classes
    task = label_studio.api("GET", f"/api/tasks/{next(iter(results.uploaded_tasks))}")
    assert not task["predictions"] and not task["annotations"]   # nobody's labels on the images sent

    user_ids = {r: label_studio.api("GET", "/api/current-user/whoami", user=r)["id"] for r in USERS}
    post_round1_boxes(label_studio, results, ds, data, user_ids, "round2" + lsr.UPLOAD_SUFFIX)
    names = {email: r for r, (email, _) in USERS.items()}   # round 2's raters are round 1's people
    loaded = lsr.load_label_studio_round(ds, "round2", prefix="round2", rater_names=names)
    assert loaded["fields"] == {"round2_r1": "r1", "round2_r2": "r2"} and loaded["samples"] == len(sent)
    n_boxes = sum(ds.select(list(sent)).count(f"raters_{r}.detections") for r in ("r1", "r2"))
    assert loaded["labels"] == n_boxes
    assert ds.exists("round2_r1").count() == len(sent)   # only the samples sent get a round-2 field
    assert set(ds.distinct("round2_r1.detections.rater_id")) == {"r1"}
    assert set(ds.load_saved_view(loaded["view"]).values("id")) == sent
    assert _preselected(ds, loaded["view"]) == ["round2_r1", "round2_r2"]   # this round's fields only
    assert _preselected(ds, None) == ["raters_r1", "raters_r2"]   # elsewhere: round 1's, as before
    round2 = _round2_agreement(ds, loaded["view"], ["round2_r1", "round2_r2"])
    took = time.monotonic() - start
    print(f"round trip (send {len(sent)} images, 2 raters post, load, round-2 agreement): {took:.1f} s")

    alpha, _ = reference(data)   # the same boxes imported from COCO
    cmp = lsr.compare_rounds(ds, "kalos", "round2")
    files = file_names(ds, data)
    assert cmp["samples"] == len(sent) and cmp["changed"] == 0
    for sid, (a1, a2) in cmp["per_sample"].items():
        assert a2 == pytest.approx(a1) == pytest.approx(alpha[files[sid]])
    assert round2.mean_alpha == pytest.approx(cmp["mean_second"]) and round2.mean_alpha < round1.mean_alpha
    dic = compare_runs(round1.collaboration, round2.collaboration, round1.collaboration_n, round2.collaboration_n,
                       DICConfig(min_shared=1))   # what the Collaboration panel shows for the two runs
    assert not dic.only_first and not dic.only_second

    with pytest.raises(SetupError, match="round2_r1.*never writes over"):
        lsr.load_label_studio_round(ds, "round2", prefix="round2", rater_names=names)
    # the App in a new process: no results cached, no Label Studio key in the environment
    monkeypatch.delenv("FIFTYONE_LABELSTUDIO_API_KEY", raising=False)
    ds._annotation_cache.clear()
    form = {k: p.default for k, p in resolved_form("load_label_studio_round", ds).items()}
    assert form["url"] == label_studio.url and form["api_key"] is None   # the URL the round was sent to
    try:
        said = str(foo.execute_operator("@kalos/agreement/load_label_studio_round", dataset=ds.name, params={
            "anno_key": "round2", "prefix": "again"}).error)
    except ExecutionError as e:
        said = str(e)
    assert "Path: api_key. Reason: Required" in said and "EOFError" not in said, said   # the form asks for it
    with pytest.raises(SetupError, match="give the Label Studio API key"):   # so does Python, in words
        lsr.load_label_studio_round(ds, "round2", prefix="again")
    again = foo.execute_operator("@kalos/agreement/load_label_studio_round", dataset=ds.name, params={
        "anno_key": "round2", "prefix": "again", "api_key": USERS["r2"][1]})   # the emails as names: new fields
    assert again.error is None, again.error
    title, rows, _ = shown_card(again)
    check_card(title, rows)
    assert dict(rows)["Written"].startswith("fields again_rater1_kalos_test, again_rater2_kalos_test; saved view ")
    assert {f: ds.info["kalos_import"]["rater_fields"][f] for f in ("again_rater1_kalos_test", "again_rater2_kalos_test")
            } == {"again_rater1_kalos_test": "rater1@kalos.test", "again_rater2_kalos_test": "rater2@kalos.test"}
    assert ds.count("again_rater1_kalos_test.detections") == ds.count("round2_r1.detections")
    assert set(ds.load_saved_view("again_samples").first().rater_list) == {"r1", "r2", *names}
    assert _preselected(ds, "again_samples") == ["again_rater1_kalos_test", "again_rater2_kalos_test"]
