"""Small datasets the FiftyOne tests share."""

import uuid

import numpy as np
from kalos_core import load_coco
from kalos_core.demo_data import build_demo

from .operators import run_operator


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


def video_dataset(fo, videos: dict, size=(640, 480), instances: bool = False, extra_fields: bool = True):
    """A video dataset from ``{video: {rater: rows (frame, track, x, y, w, h)}}`` (pixels): one sample per
    video with its frames' real video metadata, one frame field ``boxes_<rater>`` per rater, each box's
    track in ``index`` (``instances``: in a shared ``fo.Instance`` instead); the user's own ``user_note``
    on the samples and frames (no run may change it)."""
    w, h = size
    ds = fo.Dataset(f"kalos-video-{uuid.uuid4().hex[:8]}")
    samples = []
    for name, raters in videos.items():
        n = int(max(r[:, 0].max() for r in raters.values() if len(r)))
        s = fo.Sample(filepath=f"/nonexistent/{name}.mp4", metadata=fo.VideoMetadata(
            frame_width=w, frame_height=h, total_frame_count=n, frame_rate=25.0, duration=n / 25.0))
        shared = {}
        for f in range(1, n + 1):
            frame = fo.Frame(user_note=f"frame {f}") if extra_fields else fo.Frame()
            for rater, rows in raters.items():
                dets = []
                for _, t, x, y, bw, bh in rows[rows[:, 0] == f].tolist():
                    d = fo.Detection(label="object", bounding_box=[x / w, y / h, bw / w, bh / h])
                    if instances:
                        d.instance = shared.setdefault((rater, t), fo.Instance())
                    else:
                        d.index = int(t)
                    dets.append(d)
                frame[f"boxes_{rater}"] = fo.Detections(detections=dets)
            s.frames[f] = frame
        if extra_fields:
            s["user_note"] = f"video {name}"
        samples.append(s)
    ds.add_samples(samples)
    return ds
