"""Helpers shared by the tests of tests/fiftyone and tests/labelstudio (a plain module, not
collected; fixtures are in conftest.py): calling operators as the App does, reading the cards
they show, small datasets, driving a panel as the App does, and rater exports as the tools write
them."""

import copy
import json
import re
import uuid

import numpy as np
import pydash
import pytest
from kalos_core import load_coco
from kalos_core.demo_data import build_demo

PLUGIN = "@kalos/agreement"
COMPUTE = f"{PLUGIN}/compute_agreement"
#: operators whose cards need a real Label Studio server: checked in tests/labelstudio/test_label_studio_round.py
REAL_SERVER = ("send_to_label_studio", "load_label_studio_round")


# -- calling operators ---------------------------------------------------------------------------

def _uri(name: str) -> str:
    return name if name.startswith("@") else f"{PLUGIN}/{name}"


def run_operator(name: str, ds, **params):
    """Execute the operator (a name under the plugin, or a full URI) on ``ds``; raise its error."""
    import fiftyone.operators as foo

    res = foo.execute_operator(_uri(name), dataset=ds.name, params=params)
    if res.error:
        raise RuntimeError(res.error)
    return res


def resolved_form(name: str, ds, **params) -> dict:
    """The operator's resolved input form, as {name: property} (``ds`` a dataset or a view)."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    ctx = ExecutionContext({"dataset_name": ds._dataset.name, "view": ds.view()._serialize(), "params": params})
    return foo.get_operator(_uri(name)).resolve_input(ctx).type.properties


def form_errors(props: dict) -> dict:
    """{property: its error message} for every invalid property of a resolved form."""
    return {k: p.error_message for k, p in props.items() if p.invalid}


def run_agreement(ds, **params):
    """compute_agreement on ``ds`` (run key ``kalos`` unless given); raise its error."""
    params.setdefault("run_key", "kalos")
    return run_operator(COMPUTE, ds, **params)


BOX = [0.1, 0.1, 0.3, 0.3]


def same_boxes_dataset(fo, raters=("a", "b", "c"), n=4, rater_list=True):
    """``n`` samples on which every rater drew the same two boxes (fields ``raters_<r>``)."""
    ds = fo.Dataset(f"kalos-safety-{uuid.uuid4().hex[:8]}")
    samples = []
    for k in range(n):
        s = fo.Sample(filepath=f"/nonexistent/{k}.jpg", coco_id=k + 1)
        if rater_list:
            s["rater_list"] = list(raters)
        for r in raters:
            s[f"raters_{r}"] = fo.Detections(detections=[
                fo.Detection(label="cat", bounding_box=BOX),
                fo.Detection(label="dog", bounding_box=[0.5, 0.5, 0.2, 0.2 + 0.01 * k])])
        samples.append(s)
    ds.add_samples(samples)
    del samples
    return ds


def snapshot(ds):
    """Everything a run could touch: the stored documents, the schema, runs, saved views, info."""
    import fiftyone.core.odm as foo_odm
    ds.reload()
    from bson import json_util
    docs = json_util.dumps(foo_odm.get_db_conn()[ds._sample_collection_name].find({}, sort=[("_id", 1)]))
    schema = {k: (type(v).__name__, type(getattr(v, "field", None)).__name__,
                  getattr(getattr(v, "document_type", None), "__name__", None))
              for k, v in ds.get_field_schema(flat=True).items()}
    return docs, schema, sorted(ds.list_runs()), sorted(ds.list_saved_views()), dict(ds.info or {})


def try_operator(uri, ds, view=None, **params):
    """Execute the operator (a name under the plugin, or a full URI); its result, error or not."""
    import fiftyone.operators as foo
    return foo.execute_operator(_uri(uri), dataset=ds.name, view=view, params=params)


def refused(uri, ds, match, **params):
    """The operator refuses (form error or execution error) with ``match``, writing nothing."""
    from fiftyone.operators.executor import ExecutionError
    before = snapshot(ds)
    try:
        res = try_operator(uri, ds, **params)
        message = res.error_message or ""
        assert res.error, f"{uri} did not fail"
    except ExecutionError as e:
        message = str(e)
    assert match in message, message
    assert snapshot(ds) == before
    return message


# -- what an operator showed ---------------------------------------------------------------------

def _shown(res) -> dict:
    return [r for r in res.executor.to_json()["requests"] if r["operator_uri"] == "show_output"][-1]["params"]


def shown_result(res) -> dict:
    """The results of the last output card an operator showed."""
    return _shown(res)["results"]


def shown_card(res) -> tuple[str, list[tuple[str, str]], dict]:
    """``(title, [(label, text) in order], results)`` of the last card an operator showed (its title:
    the success box heading it)."""
    shown = _shown(res)
    props = shown["outputs"]["type"]["properties"]
    assert props["title"]["view"]["name"] == "Success" and list(props)[0] == "title"   # the title shown first
    rows = [(p["view"]["label"], shown["results"][name]) for name, p in props.items() if name != "title"]
    return props["title"]["view"]["label"], rows, shown["results"]


def check_card(title: str, rows: list) -> None:
    """Every operator's card: a KaLOS title, headline numbers, then Written / Run key / Next, each filled
    in, numbers rounded for people (never more than three decimals)."""
    labels = [label for label, _ in rows]
    assert title.startswith("KaLOS: ") and "failed" not in title
    assert labels[-3:] == ["Written", "Run key", "Next"] and len(labels) >= 4, labels
    assert all(isinstance(text, str) and text.strip() for _, text in rows), rows
    long = [(label, text) for label, text in rows if re.search(r"\d\.\d{4,}", text)]
    assert not long, long


# -- datasets ------------------------------------------------------------------------------------

def demo_data(tmp_path_factory, n_images=16, seed=3):
    """The demo's multi-rater boxes (``build_demo`` without images), read as the engine reads them."""
    return load_coco(build_demo(tmp_path_factory.mktemp("demo"), n_images=n_images, seed=seed, with_images=False),
                     "bbox")


def rater_dataset(fo, data, layout="rater_fields", drop_rater_list=False, with_metadata=False, annotation_ids=True):
    """``data`` (a MultiRaterDataset of boxes) as samples with one Detections field per rater
    (``raters_<r>``), or with ``layout="rater_attribute"`` one field ``raters`` whose labels carry
    ``rater_id``; ``rater_list`` unless ``drop_rater_list``, image sizes in ``metadata`` if
    ``with_metadata``, each label's ``coco_annotation_id`` if ``annotation_ids``."""
    ds = fo.Dataset(f"kalos-{uuid.uuid4().hex[:8]}")
    samples = []
    for im in data.images:
        s = fo.Sample(filepath=f"/nonexistent/{im.id}.jpg", coco_id=im.id)
        if not drop_rater_list:
            s["rater_list"] = list(im.raters)
        if with_metadata:
            s.metadata = fo.ImageMetadata(width=int(im.width), height=int(im.height))
        by_rater = {r: [] for r in im.raters}
        for a in im.annotations:
            x, y, w, h = a.geometry
            ids = {"coco_annotation_id": a.id} if annotation_ids else {}
            by_rater[a.rater].append(fo.Detection(
                label=data.categories[a.category], rater_id=a.rater, **ids,
                bounding_box=[x / im.width, y / im.height, w / im.width, h / im.height]))
        if layout == "rater_fields":
            for r in im.raters:
                s[f"raters_{r}"] = fo.Detections(detections=by_rater[r])
        else:
            s["raters"] = fo.Detections(detections=[d for r in im.raters for d in by_rater[r]])
        samples.append(s)
    ds.add_samples(samples)
    del samples
    return ds, [f"raters_{r}" for r in data.raters]


def model_dataset(fo, data, copy_of=0, seed=0):
    """Rater fields with image sizes, and ``model``: rater ``copy_of``'s boxes with seeded
    confidences (new label ids)."""
    ds, fields = rater_dataset(fo, data, with_metadata=True, annotation_ids=False)
    rng = np.random.default_rng(seed)
    rows = ds.values(f"{fields[copy_of]}.detections")
    ds.set_values("model", [None if row is None else fo.Detections(detections=[
        fo.Detection(label=d.label, bounding_box=d.bounding_box, confidence=float(rng.random())) for d in row])
        for row in rows])
    return ds, fields


THREE_RATER_FIELDS = ["raters_r1", "raters_r2", "raters_r3"]


def three_raters(fo):
    """Sample 1: r1, r2 draw class A and r3 class B on one object; r1 alone draws a second box.
    Sample 2: all three agree on A (high α)."""
    ds = fo.Dataset(f"kalos-cons-{uuid.uuid4().hex[:8]}")
    d = lambda label, box: fo.Detection(label=label, bounding_box=box)  # noqa: E731
    s1 = fo.Sample(filepath="/nonexistent/1.jpg", rater_list=["r1", "r2", "r3"],
                   metadata=fo.ImageMetadata(width=100, height=100))
    s1["raters_r1"] = fo.Detections(detections=[d("A", [0.10, 0.10, 0.30, 0.30]), d("A", [0.70, 0.70, 0.20, 0.20])])
    s1["raters_r2"] = fo.Detections(detections=[d("A", [0.12, 0.10, 0.30, 0.32])])
    s1["raters_r3"] = fo.Detections(detections=[d("B", [0.10, 0.12, 0.28, 0.30])])
    s2 = fo.Sample(filepath="/nonexistent/2.jpg", rater_list=["r1", "r2", "r3"],
                   metadata=fo.ImageMetadata(width=100, height=100))
    for f in THREE_RATER_FIELDS:
        s2[f] = fo.Detections(detections=[d("A", [0.2, 0.2, 0.4, 0.4]), d("B", [0.7, 0.1, 0.2, 0.2])])
    ds.add_samples([s1, s2])
    run_operator("compute_agreement", ds, rater_fields=THREE_RATER_FIELDS, run_key="kalos", bootstrap=0)
    return ds


def model_rater_dataset(fo, n=12, seed=0):
    """Raters a, b, c (``MODEL_RATER_FIELDS``) (jittered boxes of two classes) and a ``model`` field: b's boxes at
    confidence 0.9, plus one extra box per sample at confidence 0.1."""
    rng = np.random.default_rng(seed)
    ds = fo.Dataset(f"kalos-model-{uuid.uuid4().hex[:8]}")
    samples = []
    for i in range(n):
        s = fo.Sample(filepath=f"/nonexistent/{i}.jpg", rater_list=["a", "b", "c"])
        dets = {r: [] for r in "abc"}
        for _ in range(4):
            x, y = rng.uniform(0.05, 0.7, 2)
            for r, sd in zip("abc", (0.002, 0.01, 0.03)):
                if rng.random() < 0.85:
                    lab = "cat" if rng.random() < 0.9 else "dog"
                    dets[r].append(fo.Detection(label=lab, bounding_box=[x + rng.normal(0, sd), y + rng.normal(0, sd),
                                                                         0.2, 0.2]))
        for r in "abc":
            s[f"raters_{r}"] = fo.Detections(detections=dets[r])
        model = [fo.Detection(label=d.label, bounding_box=list(d.bounding_box), confidence=0.9) for d in dets["b"]]
        model.append(fo.Detection(label="cat", bounding_box=[0.0, 0.8, 0.1, 0.1], confidence=0.1))
        s["model"] = fo.Detections(detections=model)
        samples.append(s)
    ds.add_samples(samples)
    return ds


MODEL_RATER_FIELDS = ["raters_a", "raters_b", "raters_c"]


# -- driving a panel as the App does ---------------------------------------------------------------

DISAGREEING = {"class_disagreement", "unmatched"}


def agreement_dataset(fo, demo, layout):
    """``demo`` in ``layout`` with an agreement run ``kalos`` (LSA at 0.3, 0.7, 0.9; bootstrap 200)."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    ds, fields = rater_dataset(fo, demo, layout)
    kw = {"rater_fields": fields} if layout == "rater_fields" else {"label_field": "raters"}
    compute_agreement_run(ds, run_key="kalos", lsa_thresholds=(0.3, 0.7, 0.9), bootstrap=200, **kw)
    return ds


def lodash_merge(dst, src, replace_lists: bool = False):
    """lodash ``merge``, which the App uses to draw a panel from its state and data (lists merged
    index by index: a longer list underneath shows through), or with ``replace_lists`` its
    ``mergeWith`` that replaces lists (the App's write of a panel form's values into the state)."""
    if isinstance(src, dict):
        out = copy.deepcopy(dst) if isinstance(dst, dict) else {}
        for k, v in src.items():
            out[k] = lodash_merge(out.get(k), v, replace_lists)
        return out
    if isinstance(src, list) and not replace_lists:
        out = copy.deepcopy(dst) if isinstance(dst, list) else []
        for i, v in enumerate(src):
            if i < len(out):
                out[i] = lodash_merge(out[i], v)
            else:
                out.append(lodash_merge(None, v))
        return out
    return copy.deepcopy(src)


class Panel:
    """Drives one panel as the App does: ``app`` is the App's own panel state (saved in its
    spaces, sent with every event), ``data`` its panel data, ``state`` what the panel's views
    show: the lodash merge of the two. A test that writes into ``state`` changes an input: the
    App's form then writes everything it shows into ``app`` (as FiftyOne 1.22's does)."""

    def __init__(self, ds, name):
        self.ds, self.uri, self.app, self.data, self.state = ds, f"{PLUGIN}/{name}", {}, {}, {}
        self.requests, self.output = [], None
        self.panel_id, self._shown = f"test-{uuid.uuid4().hex[:8]}", {}

    @property
    def app_keys(self) -> set:
        """The keys the App's own state holds a value for."""
        return {k for k, v in self.app.items() if v is not None}

    def call(self, method, view=None, **params):
        import fiftyone.operators as foo

        if self.state != self._shown:   # an input changed: the form writes what it shows
            self.app = lodash_merge(self.app, self.state, replace_lists=True)
        res = foo.execute_operator(self.uri, dataset=self.ds.name, **({} if view is None else {"view": view}), params={
            "panel_id": self.panel_id, "__method__": method, "panel_state": json.loads(json.dumps(self.app)),
            **params})
        assert res.error is None, res.error
        self.requests = res.executor.to_json()["requests"]
        json.dumps(self.requests, allow_nan=False)  # what the App receives must be plain JSON (no NaN)
        for r in self.requests:
            p = r["params"]
            if r["operator_uri"] == "patch_panel_state":
                for k, v in p["state"].items():
                    pydash.set_(self.app, k, copy.deepcopy(v))
            elif r["operator_uri"] == "patch_panel_data":
                for k, v in p["data"].items():
                    pydash.set_(self.data, k, copy.deepcopy(v))
            elif r["operator_uri"] == "show_panel_output":
                self.output = p["output"]
        self.state = lodash_merge(lodash_merge({}, self.app), self.data)
        self._shown = copy.deepcopy(self.state)
        return self

    def ops(self, uri):
        return [r["params"] for r in self.requests if r["operator_uri"] == uri]

    def view(self):
        """The view the last call set in the App, rebuilt from its serialized stages."""
        import fiftyone.core.view as fov

        (params,) = self.ops("set_view")
        return fov.DatasetView._build(self.ds, params["view"])

    def rendered(self):
        return set(self.output["type"]["properties"])


def rater_fields(ds):
    """The rater fields of the run ``kalos``."""
    return ds.get_run_info("kalos").config.rater_fields


def _hist(seed):
    rng = np.random.default_rng(seed)
    return [int(v) for v in rng.integers(0, 50, 20)]


CALIBRATION = {
    "task": "bbox", "n_images": 16, "seed": 0, "bootstrap": 200, "confidence": 0.95,
    "distances": {
        name: {"ks": ks, "ks_ci": [ks - 0.05, ks + 0.05], "tau_star": tau, "tau_ci": [tau - 0.04, tau + 0.03],
               "similarity_threshold": 1 - tau, "similarity_ci": [1 - tau - 0.03, 1 - tau + 0.04], "sigma": 0.08,
               "tau_method": "ks_crossing",
               "do": {"n": 500, "mean": 0.2, "median": 0.18, "std": 0.1, "mode": 0.15},
               "de": {"n": 4000, "mean": 0.9, "median": 0.95, "std": 0.1, "mode": 1.0},
               "histogram": {"edges": [k / 20 for k in range(21)], "do": _hist(1), "de": _hist(2)},
               "strata": None}
        for name, ks, tau in (("iou", 0.81, 0.42), ("giou", 0.77, 0.55))},
    "recommended": {"distance": "iou", "tau_star": 0.42, "similarity_threshold": 0.58, "standard_threshold": 0.5,
                    "reason": "highest KS"},
    "similarity_threshold": 0.58,
}


def store_calibration(ds, key="calibration", **config):
    """A calibration run ``key`` whose results are :data:`CALIBRATION` (a hand-made result)."""
    cfg = ds.init_run(method="kalos_calibration", similarity_threshold=CALIBRATION["similarity_threshold"], **config)
    ds.register_run(key, cfg, overwrite=True, cleanup=False)
    ds.save_run_results(key, ds.init_run_results(key, **CALIBRATION), overwrite=True)


# -- rater exports as the annotation tools write them ------------------------------------------------

def new_name():
    return f"kalos-rex-{uuid.uuid4().hex[:8]}"


def coco_per_rater(data, rater):
    """One rater's plain COCO export of a multi-rater COCO dict (the images assigned to the rater)."""
    images = [{k: v for k, v in im.items() if k != "rater_list"} for im in data["images"] if rater in im["rater_list"]]
    anns = [{k: v for k, v in a.items() if k != "rater_id"} for a in data["annotations"] if a["rater_id"] == rater]
    return {"images": images, "annotations": anns, "categories": data["categories"]}


def dump(folder, name_, data):
    path = folder / name_
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def agreement_of(ds, fields):
    """The results of an agreement run ``kalos`` at threshold 0.5 over ``fields``."""
    import fiftyone.operators as foo

    res = foo.execute_operator(COMPUTE, dataset=ds.name, params={"rater_fields": fields, "run_key": "kalos",
                                                              "threshold": 0.5})
    assert res.error is None, res.error
    return ds.load_run_results("kalos")


def reference(data):
    """Per-image α (keyed by file name) and the run results of the multi-rater COCO import of ``data``."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import (
        import_multirater_coco,
    )

    ds = import_multirater_coco(new_name(), data, placeholders=False)
    res = agreement_of(ds, ["raters_r1", "raters_r2"])
    files = {im["id"]: im["file_name"] for im in data["images"]}
    return {files[i]: a for i, a in zip(ds.values("coco_id"), ds.values("kalos_alpha"))}, res


def check_same_alpha(ds, lvis_reference, mean=0.6889, global_=0.6483):
    alpha, ref = lvis_reference
    res = agreement_of(ds, sorted(ds.info["kalos_import"]["rater_fields"]))
    got = dict(zip(ds.values("file_key"), ds.values("kalos_alpha")))
    assert got == pytest.approx(alpha, nan_ok=True)
    assert round(res.mean_alpha, 4) == round(ref.mean_alpha, 4) == mean
    assert round(res.global_alpha, 4) == round(ref.global_alpha, 4) == global_


def lvis_subset(path, n):
    """The multi-rater COCO dict of the first ``n`` images of the LVIS r1/r2 file."""
    data = json.loads(path.read_text())
    images = data["images"][:n]
    ids = {im["id"] for im in images}
    return {**data, "images": images, "annotations": [a for a in data["annotations"] if a["image_id"] in ids]}


def cvat_labels(data) -> str:
    """The ``<labels>`` of a CVAT meta: the categories of a COCO dict."""
    names = sorted({c["name"] for c in data["categories"]})
    return "<labels>" + "".join(f"<label><name>{n}</name><attributes/></label>" for n in names) + "</labels>"


def cvat_images(data, rater, first_id=0, extra="") -> list[str]:
    """The ``<image>`` elements of one rater's labels of a multi-rater COCO dict (boxes in pixels);
    ``extra``: more attributes of each image (a project export's ``subset`` and ``task_id``)."""
    from xml.sax.saxutils import quoteattr

    names = {c["id"]: c["name"] for c in data["categories"]}
    by_image: dict = {}
    for a in data["annotations"]:
        if a["rater_id"] == rater:
            by_image.setdefault(a["image_id"], []).append(a)
    lines = []
    for k, im in enumerate(i for i in data["images"] if rater in i["rater_list"]):
        lines.append(f'<image id="{first_id + k}" name={quoteattr(im["file_name"])}{extra} width="{im["width"]}" '
                     f'height="{im["height"]}">')
        for a in by_image.get(im["id"], []):
            x, y, w, h = a["bbox"]
            lines.append(f'<box label={quoteattr(names[a["category_id"]])} source="manual" occluded="0" '
                         f'xtl="{x!r}" ytl="{y!r}" xbr="{x + w!r}" ybr="{y + h!r}" z_order="0"></box>')
        lines.append("</image>")
    return lines


HEAD = ['<?xml version="1.0" encoding="utf-8"?>', "<annotations>", "<version>1.1</version>"]


DUMPED = "<dumped>2026-11-26 00:00:00+00:00</dumped>"


def whole_pixels(data):
    """``data`` with its box corners rounded to whole pixels, as FiftyOne's CVAT importer reads them
    (``CVATImageBox.from_box_dict``: ``int(round(float(xtl)))``)."""
    out = copy.deepcopy(data)
    for a in out["annotations"]:
        x, y, w, h = a["bbox"]
        a["bbox"] = [round(x), round(y), round(x + w) - round(x), round(y + h) - round(y)]
    return out


def label_studio_tasks(data, users=None):
    """A Label Studio JSON export of a multi-rater COCO dict: one task per image, one annotation per rater
    (``completed_by`` the user id, ``users`` {rater: id}), rectangles in percent of the image."""
    users = users or {r: k + 1 for k, r in enumerate(sorted({r for im in data["images"] for r in im["rater_list"]}))}
    names = {c["id"]: c["name"] for c in data["categories"]}
    tasks = []
    for t, im in enumerate(data["images"]):
        w, h = im["width"], im["height"]
        anns = []
        for r in im["rater_list"]:
            result = [{"id": f"{a['id']}", "type": "rectanglelabels", "from_name": "label", "to_name": "image",
                       "original_width": w, "original_height": h, "image_rotation": 0,
                       "value": {"x": a["bbox"][0] / w * 100, "y": a["bbox"][1] / h * 100,
                                 "width": a["bbox"][2] / w * 100, "height": a["bbox"][3] / h * 100,
                                 "rotation": 0, "rectanglelabels": [names[a["category_id"]]]}}
                      for a in data["annotations"] if a["image_id"] == im["id"] and a["rater_id"] == r]
            anns.append({"id": 1000 * t + users[r], "completed_by": users[r], "result": result,
                         "was_cancelled": False, "ground_truth": False})
        tasks.append({"id": t + 1, "data": {"image": f"/data/local-files/?d=lvis/{im['file_name']}"},
                      "annotations": anns, "drafts": [], "predictions": []})
    return tasks


def brush_rle(mask: np.ndarray) -> list[int]:
    """A mask as Label Studio's brush RLE (its RGBA pixels), by Label Studio's own encoder: the
    converter package, or the SDK's copy of it (tests/labelstudio runs this with the Label Studio
    venv's SDK, where the plugin's venv has neither)."""
    import importlib

    for module in ("label_studio_converter.brush", "label_studio_sdk.converter.brush"):
        try:
            brush = importlib.import_module(module)
        except ImportError:
            continue
        return brush.encode_rle(np.repeat(mask.ravel(), 4))
    pytest.skip("Label Studio's brush encoder is not installed (label-studio-converter or label-studio-sdk)")


def check_label_studio_cancelled_polygons_and_brush_masks(rex, tmp_path):
    """A cancelled annotation is not an assignment; rectangles, polygons and brush masks read as
    detections, polylines and segmentations (``rex``: the rater-import module)."""
    mask = np.zeros((20, 40), np.uint8)
    mask[5:9, 10:16] = 255
    res = {"original_width": 40, "original_height": 20}
    rect = {**res, "type": "rectanglelabels",
            "value": {"x": 25, "y": 25, "width": 15, "height": 20, "rotation": 0, "rectanglelabels": ["cat"]}}
    poly = {**res, "type": "polygonlabels", "value": {"points": [[25, 25], [40, 25], [40, 45]],
                                                      "polygonlabels": ["cat"]}}
    paint = {**res, "type": "brushlabels", "value": {"format": "rle", "rle": brush_rle(mask),
                                                    "brushlabels": ["cat"]}}
    tasks = [{"id": 1, "data": {"image": "/data/upload/1/a.jpg"}, "annotations": [
        {"id": 1, "completed_by": {"id": 1, "email": "ann@x"}, "result": [rect, poly, paint]},
        {"id": 2, "completed_by": {"id": 2, "email": "bob@x"}, "result": [], "was_cancelled": True}]},
        {"id": 2, "data": {"image": "/data/upload/1/b.jpg"}, "annotations": [
            {"id": 3, "completed_by": {"id": 2, "email": "bob@x"}, "result": []}]},
        {"id": 3, "data": {"image": "/data/upload/1/c.jpg"}, "annotations": [   # an image both labelled
            {"id": 4, "completed_by": {"id": 1, "email": "ann@x"}, "result": []},
            {"id": 5, "completed_by": {"id": 2, "email": "bob@x"}, "result": []}]}]
    path = dump(tmp_path, "ls.json", tasks)
    with pytest.raises(ValueError, match="several kinds of labels .*detections, polylines, segmentations"):
        rex.import_label_studio(new_name(), path)
    got = {}
    for kind in ("detections", "polylines", "segmentations"):
        ds = rex.import_label_studio(new_name(), path, label_key=kind)
        a, b = (ds.match({"file_key": k}).first() for k in ("a.jpg", "b.jpg"))
        assert a.rater_list == ["ann@x"] and b.rater_list == ["bob@x"]   # bob skipped a.jpg: not assigned
        assert a["raters_bob_x"] is None and ds.info["kalos_import"]["left_out"]["cancelled"] == 1
        got[kind] = a["raters_ann_x"]
    assert got["detections"].detections[0].bounding_box == pytest.approx([0.25, 0.25, 0.15, 0.2])
    assert np.array(got["polylines"].polylines[0].points[0]) == pytest.approx(
        np.array([[0.25, 0.25], [0.4, 0.25], [0.4, 0.45]]))
    seg = got["segmentations"].detections[0]
    assert seg.bounding_box == pytest.approx([10 / 40, 5 / 20, 6 / 40, 4 / 20])
    assert seg.mask.shape == (4, 6) and seg.mask.all()



# -- every registered operator and panel (test_common_operators.py, test_common_panels.py) -----------
# Built from what the plugin declares: FiftyOne's registry of the plugin's operators and panels, and
# each measure's declaration (fiftyone_layer/registry.py: the run kind and the operator that writes it).


def registered(kind: str) -> list:
    """The plugin's registered operators (``kind="operator"``) or panels (``"panel"``), as FiftyOne
    lists them, in registration order."""
    import fiftyone.operators as foo

    return [op for op in foo.list_operators(builtin=False, type=kind) if op.plugin_name == PLUGIN]


def run_writers() -> dict:
    """{run kind: the name of the operator that writes it}, for every measure the plugin declares."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import registry

    return {run.method: run.app.operator for run in registry.plugin_runs()}


def form_params(name: str, fields: list) -> dict:
    """The values an operator's form needs beyond its defaults on :func:`common_dataset` to show all
    its inputs and to run cheaply: the rater fields, with bootstrap off (``common_run_params``
    adds it where the form has one); the plugin-only inputs below are hand-written until each
    measure declares them."""
    extra = {
        "noise_aware_evaluation": {"predictions_field": "model", "reference_field": fields[0],
                                   "noise_fields": fields[1:]},
        "label_convergence": {"predictions_field": "model"},
        "simulate_raters": {"reference_field": fields[0]},
        "build_consensus": {"agreement_key": "kalos"},
    }
    return {"rater_fields": list(fields), **extra.get(name, {})}


def common_run_params(name: str, ds, fields: list, run_key: str) -> dict:
    """:func:`form_params` of a run-writing operator, under ``run_key`` where its form has a run
    key input, with bootstrap off where it has one (the cheapest run)."""
    params = form_params(name, fields)
    _, props = validation_errors(name, ds, params)
    if "run_key" in props:
        params["run_key"] = run_key
    if "bootstrap" in props:
        params["bootstrap"] = 0
    return params


def common_dataset(fo, data, seed=0):
    """The small dataset of the common tests: ``data``'s raters (image sizes, an ``embedding``
    vector on every rater label for BAE) and a ``model`` field with confidences, plus what a user
    keeps there: a field ``user_note``, a label attribute ``user_score`` and a saved view
    ``user_view``, which no run may change. Returns ``(dataset, rater fields)``."""
    ds, fields = model_dataset(fo, data, seed=seed)
    rng = np.random.default_rng(seed)
    for f in fields:
        rows = ds.values(f"{f}.detections")
        for row in rows:
            for d in row or ():
                d["embedding"] = [float(v) for v in rng.normal(size=4)]
                d["user_score"] = float(rng.random())
        ds.set_values(f, [None if row is None else fo.Detections(detections=row) for row in rows])
    ds.set_values("user_note", [f"note {k}" for k in range(len(ds))])
    ds.save_view("user_view", ds.limit(2))
    return ds, fields


def validation_errors(name: str, ds, params: dict) -> tuple[dict, dict]:
    """``({input: reason}, {input: property})``: the operator's form resolved with ``params`` and
    checked as FiftyOne checks it before executing (the plugin's form errors and FiftyOne's own
    type, choice and required checks)."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext, ValidationContext

    op = foo.get_operator(_uri(name))
    ctx = ExecutionContext({"dataset_name": ds.name, "params": params})
    prop = op.resolve_input(ctx)
    errors = ValidationContext(ctx, prop, op).errors
    return {e.path.lstrip("."): e.reason for e in errors}, prop.type.properties


def declared(name: str) -> list:
    """The engine's declared parameters (of every measure) called ``name``."""
    from kalos_core.measure import measures

    return [p for m in measures() for p in m.params if p.name == name]


def bad_values(name: str, prop) -> list:
    """Values the input ``name`` must refuse, from its type: text for a number, numbers outside
    every declared range of a parameter of that name, a name outside its choices, text that is
    no list of numbers where a parameter is one, a run key that is no plain name."""
    kind = type(prop.type).__name__
    params = declared(name)
    if kind == "Number":
        out = ["not a number"]
        bounds = [(0.0, 1.0) if p.kind == "fraction" else (p.lo, p.hi) for p in params
                  if p.kind in ("int", "float", "fraction")]
        if bounds and all(lo is not None for lo, _ in bounds):
            out.append(min(lo for lo, _ in bounds) - 1)
        if bounds and all(hi is not None for _, hi in bounds):
            out.append(max(hi for _, hi in bounds) + 1)
        return out
    if kind == "Enum":
        return ["not one of the choices"]
    if kind == "List" and getattr(prop.view, "choices", None):
        return [["not one of the choices"]]
    if kind == "String" and name == "run_key":
        return ["not a key!"]
    if kind == "String" and params and all(p.kind in ("fractions", "floats", "ints") for p in params):
        return ["no numbers"]
    return []


def run_state(ds) -> dict:
    """All a run may touch in ``ds``, by part (so that a difference names the part): each sample's
    stored document (but FiftyOne's ``last_modified_at``, which any write or delete moves on), the
    schema, runs, saved views, info, and the App config (its colour scheme's field entries in path
    order: the App looks an entry up by its path)."""
    from bson import json_util

    docs, schema, runs, views, info = snapshot(ds)
    samples = [{k: v for k, v in doc.items() if k != "last_modified_at"} for doc in json_util.loads(docs)]
    app = json.loads(json.dumps(ds.app_config.to_dict(), sort_keys=True, default=str))
    if (app.get("color_scheme") or {}).get("fields"):
        app["color_scheme"]["fields"].sort(key=lambda e: str(e.get("path")))
    return {"samples": samples, "schema": schema, "runs": runs, "saved views": views, "info": info, "app config": app}


def import_tools():
    """A fresh copy of ``benchmarks/import_bad_input_table.py``, the writers of exports as the tools
    write them (and their spoiled forms) that the import tests and the imports' bad-input table share
    (a copy per test module: some of them set the writers' options)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "import_bad_input_table.py"
    spec = importlib.util.spec_from_file_location("import_bad_input_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
