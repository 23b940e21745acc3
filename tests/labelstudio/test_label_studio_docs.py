"""docs/review.md's Python example of the second round, run as written against the real server
(conftest.py): only its URL, token and data set name are swapped for the test's, and between its send and
its load the two annotators draw their round-1 boxes through the REST API (the example's "the annotators
label the project" comment). Round 1: the LVIS r1/r2 boxes of 12 images, blank PNGs of their sizes."""

import contextlib
import io
import re

import pytest

from tests.fiftyone.helpers import agreement_of, lvis_subset, new_name
from tests.labelstudio.server import REPO_ROOT, USERS, post_round1_boxes

pytestmark = [pytest.mark.labelstudio, pytest.mark.realdata]
ANNOTATORS_LABEL = "# ... the annotators label the project"   # the line where they do


def _example() -> str:
    text = (REPO_ROOT / "docs" / "review.md").read_text()
    section = text.split("## A second round in Label Studio", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def test_the_docs_python_round_runs_as_written(lvis_subset_path, label_studio, label_studio_sdk, tmp_path,
                                               monkeypatch):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import (
        import_multirater_coco,
    )
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.review import (
        tag_for_review,
    )

    monkeypatch.delenv("FIFTYONE_LABELSTUDIO_API_KEY", raising=False)   # the example passes the token itself
    data = lvis_subset(lvis_subset_path, 12)
    ds = import_multirater_coco(new_name(), data, placeholders=str(tmp_path / "images"))
    agreement_of(ds, ["raters_r1", "raters_r2"])
    queue = ds.load_saved_view(tag_for_review(ds, "kalos", alpha_below=1.0)["view"])
    code = _example()
    for literal, value in (('"http://localhost:8080"', label_studio.url), ('"my-agreement"', ds.name),
                           ('"0123456789abcdef0123456789abcdef01234567"', USERS["r1"][1])):
        assert literal in code, literal   # the example changed shape: update this test with it
        code = code.replace(literal, repr(value))
    send, load = code.split(ANNOTATORS_LABEL)
    load = load.split("\n", 1)[1]   # the rest of the comment's line
    scope = {}
    exec(compile(send, "docs/review.md (send)", "exec"), scope)   # noqa: S102  (the docs' own example)
    ds._annotation_cache.clear()   # the load finds the token only where the example gives it
    results = ds.load_annotation_results("round2")
    user_ids = {r: label_studio.api("GET", "/api/current-user/whoami", user=r)["id"] for r in USERS}
    post_round1_boxes(label_studio, results, ds, data, user_ids, "round2_ls_upload")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(load, "docs/review.md (load)", "exec"), scope)   # noqa: S102
    out = scope["out"]
    assert out["samples"] == len(queue) and out["view"] == "round2_samples"
    assert sorted(out["fields"]) == ["round2_rater1_kalos_test", "round2_rater2_kalos_test"]
    assert f"'samples': {len(queue)}" in printed.getvalue() and "'changed': 0" in printed.getvalue()
