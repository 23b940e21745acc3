"""The FiftyOne side of video agreement (:mod:`kalos_core.video`), and its Python entries.

::

    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.video import video_run
    result = video_run(dataset, rater_fields=["frames.boxes_alice", "frames.boxes_bob"], run_key="video")

Reads a video dataset's frame-level Detections, one field per rater (``frames.<field>``) or one field
whose labels carry the rater in an attribute. A box's track is FiftyOne's object identity on
video: ``Detection.index`` (as CVAT and MOT imports set it), else ``Detection.instance`` (a
:class:`fo.Instance` shared by the track's boxes). Boxes are scaled to pixels by the video's
``metadata.frame_width`` / ``frame_height`` where known. Writes ``frames.<key>_alpha`` (each frame's
α) and, per video, ``<key>_alpha`` (mean over its frames) and ``<key>_alpha_global`` (pooled), all
sortable; the run (``config.method == "kalos_video"``) stores ``VideoResult.to_dict()``.
"""

from __future__ import annotations

import numpy as np

from kalos_core.measure import MeasureData
from kalos_core.video import VideoResult
from kalos_core.video.data import video_data

from ..errors import SetupError
from ..measure_runs import MeasureRun, measure_run, measure_steps
from ..registry import Offered, human

DEFAULT_KEY = "video"


def _paths(key: str) -> list[str]:
    return [f"{key}_alpha", f"{key}_alpha_global", f"frames.{key}_alpha"]


def _field(source) -> str:
    return "rater_fields" if source.rater_attribute is None else "label_field"


def _check(collection, source, config, extras) -> None:
    if collection.media_type != "video":
        raise SetupError("video agreement reads video datasets; this one holds "
                         f"{collection.media_type or 'no'} media", _field(source))


def _track_ids(index: list, instance: list, where) -> list:
    """Each box's track: its ``index``, else its ``instance``'s id (numbered within the rater)."""
    out = []
    for k, (i, inst) in enumerate(zip(index, instance)):
        if i is not None:
            out.append(int(i))
        elif inst is not None:
            out.append(("instance", str(inst)))
        else:
            raise SetupError(f"{where(k)} has neither index nor instance: video agreement follows each box's "
                             "track through Detection.index (or a shared fo.Instance); set it on every box",
                             "rater_fields")
    return out


def _read(collection, source, config, extras) -> MeasureData:
    """Every video's raters' rows ``(frame, track, x, y, w, h, class)`` in pixels, as the engine reads them."""
    attr = source.rater_attribute
    paths = ["id", "metadata.frame_width", "metadata.frame_height", "frames.frame_number"]
    for f in source.fields:
        paths += [f"{f}.detections.{k}" for k in ("id", "bounding_box", "label", "index", "instance._id")]
        paths += [f"{f}.detections.{attr}"] if attr else []
    columns = dict(zip(paths, collection.values(paths)))
    classes: dict = {}
    videos, sizes, frames = {}, {}, {}
    for s, sid in enumerate(columns["id"]):
        width = columns["metadata.frame_width"][s] or 1.0
        height = columns["metadata.frame_height"][s] or 1.0
        numbers = columns["frames.frame_number"][s] or []
        sizes[sid], frames[sid] = (float(width), float(height)), list(numbers)
        rows: dict = {r: [] for r in (source.raters.values() if attr is None else ())}
        instances: dict = {}
        for f in source.fields:
            get = {k: columns[f"{f}.detections.{k}"][s] or [] for k in ("id", "bounding_box", "label", "index",
                                                                       "instance._id")}
            who = columns[f"{f}.detections.{attr}"][s] or [] if attr else None
            for t, number in enumerate(numbers):
                boxes = get["bounding_box"][t] or []
                if not boxes:
                    continue
                ids = get["id"][t]
                where = lambda k: f"sample {sid}, frame {number}, field {f}: box {ids[k]}"   # noqa: E731
                tracks = _track_ids(get["index"][t] or [None] * len(boxes),
                                    get["instance._id"][t] or [None] * len(boxes), where)
                for k, (box, label, track) in enumerate(zip(boxes, get["label"][t], tracks)):
                    rater = source.raters.get(f, f) if attr is None else who[t][k]
                    if rater is None:
                        raise SetupError(f"{where(k)} has no {attr!r}: every label needs its rater", "rater_attribute")
                    if isinstance(track, tuple):
                        track = -1 - instances.setdefault((str(rater), track[1]), len(instances))
                    x, y, w, h = box
                    rows.setdefault(str(rater), []).append(
                        (number, track, x * width, y * height, w * width, h * height,
                         classes.setdefault(label, len(classes) + 1)))
        videos[sid] = {r: np.asarray(v, float).reshape(-1, 7) for r, v in rows.items()}
    data = video_data({v: r for v, r in videos.items() if len(r) >= 1}, sizes, frames,
                      {k: str(n) for n, k in classes.items()})
    if not any(len(r) >= 2 for r in videos.values()):
        raise SetupError("no video has two raters' labels: nothing to compare", _field(source))
    return data


def _write(collection, source, run_key, result: VideoResult, data) -> None:
    per = result.per_video
    mean = {sid: v["mean_alpha"] for sid, v in per.items()}
    pooled = {sid: v["global_alpha"] for sid, v in per.items()}
    by_frame = {sid: dict(zip(v["frames"], v["frame_alpha"])) for sid, v in per.items()}
    collection.set_values(f"{run_key}_alpha", mean, key_field="id")
    collection.set_values(f"{run_key}_alpha_global", pooled, key_field="id")
    collection.set_values(f"frames.{run_key}_alpha", by_frame, key_field="id")


def _card(res: VideoResult, key: str) -> tuple:
    p = res.pooled
    return "KaLOS: video agreement", [
        ("Mean α over frames", res.mean_alpha), ("Global α", res.global_alpha),
        ("HOTA (DetA, AssA, LocA), all pairs", f"{human(p['HOTA'])} ({human(p['DetA'])}, {human(p['AssA'])}, "
                                               f"{human(p['LocA'])})"),
        ("IDF1, all pairs", human(p["IDF1"])), ("Identity switches / fragmentations",
                                              f"{p['id_switches']} / {p['fragmentations']}"),
        ("Videos, frames", f"{res.n_videos}, {res.n_frames}")], \
        f"Sort the videos by {key}_alpha and their frames by frames.{key}_alpha."


RUN = MeasureRun(
    "video", "video agreement", DEFAULT_KEY, ("box",), owned_paths=lambda source, run_key: _paths(run_key),
    write=_write, read=_read, check=_check, two_raters=False, video=True, config_key="video_config",
    app=Offered(
        "KaLOS video agreement", "compute_video_agreement", "KaLOS: video agreement",
        "α frame by frame and identity agreement track by track (HOTA, IDF1, identity switches) between the "
        "raters of a video dataset",
        key_help="writes frames.<key>_alpha on the frames, <key>_alpha and <key>_alpha_global on the videos",
        panels=("video:VideoAgreementPanel",),
        card=_card, notice=lambda res, key: f"KaLOS video agreement {key!r}: mean α {human(res.mean_alpha)} over "
                                            f"{res.n_frames} frames of {res.n_videos} videos"))


def video_steps(collection, **params):
    """:func:`video_run` as a generator of ``(fraction, message)`` steps; returns the result."""
    return measure_steps(RUN, collection, **params)


def video_run(collection, progress=None, **params) -> VideoResult:
    """Video agreement on ``collection`` stored under ``run_key``: the rater source (``rater_fields`` as
    ``frames.<field>``, or ``label_field`` + ``rater_attribute``), ``run_key``, ``overwrite`` and the
    parameters of :class:`kalos_core.video.VideoConfig`."""
    return measure_run(RUN, collection, progress, **params)


# -- the views the video panel's clicks show -------------------------------------------------------

#: the frames a switch's clip shows on either side of the switch
SWITCH_MARGIN = 12


def _last_frames(dataset, ids: list) -> dict:
    """``{sample id: its last frame number}`` of the videos ``ids``."""
    view = dataset.select(ids)
    return {sid: max(numbers or [1]) for sid, numbers in zip(view.values("id"), view.values("frames.frame_number"))}


def frame_view(dataset, sample_id: str, frame: int):
    """Video ``sample_id`` as one clip from ``frame`` to its end: opened, it plays from that frame (FiftyOne's
    panels cannot seek the App's player)."""
    last = _last_frames(dataset, [sample_id])[sample_id]
    return dataset.select(sample_id).to_clips([[(int(frame), max(int(frame), last))]])


def switches_of(dataset, run_key: str, pair: str) -> dict:
    """``{sample id: frames where the raters of ``pair`` ("A / B") switch identity}`` of a stored video run,
    the videos with the most switches first (videos without one left out)."""
    per = dataset.load_run_results(run_key, load_view=False).per_video
    found = {sid: list(v["pairs"].get(pair, {}).get("switch_frames") or []) for sid, v in per.items()}
    return dict(sorted(((s, f) for s, f in found.items() if f), key=lambda x: (-len(x[1]), x[0])))


def switch_view(dataset, switches: dict, margin: int = SWITCH_MARGIN):
    """One clip per switch (``switches`` from :func:`switches_of`): the frames ``margin`` either side of it."""
    ids = list(switches)
    last = _last_frames(dataset, ids)
    return dataset.select(ids, ordered=True).to_clips(
        [[(max(1, f - margin), min(last[s], f + margin)) for f in switches[s]] for s in ids])
