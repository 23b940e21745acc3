"""The video part of ``make demo``: a few short seeded videos, written as real mp4 files, with several
raters' tracks and planted identity switches (:func:`kalos_core.video.data.synthetic_videos`), and a
video agreement run on them (run ``video``).

Each video shows the objects as coloured boxes moving over a grey ground (its frame number in a
corner); each rater's boxes are one frame field ``frames.boxes_<rater>``, every box's track in
``Detection.index``. The files are VP9 in mp4 (what a browser plays; MPEG-4 part 2 where this
OpenCV cannot write VP9).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

VIDEO_DATASET = "kalos-demo-video"
FPS = 10
SIZE = (480, 270)


def write_video(path: Path, truth: np.ndarray, n_frames: int, seed: int = 0) -> str:
    """An mp4 of ``n_frames`` frames showing the rows ``truth`` (frame, track, x, y, w, h in pixels); returns
    its codec."""
    import cv2

    width, height = SIZE
    colours = np.random.default_rng(seed).integers(60, 255, (int(truth[:, 1].max()) + 2, 3)).tolist()
    writer = None
    for codec in ("vp09", "mp4v"):
        writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*codec), FPS, (width, height))
        if writer.isOpened():
            break
    for f in range(1, n_frames + 1):
        img = np.full((height, width, 3), 90, np.uint8)
        for _, t, x, y, w, h in truth[truth[:, 0] == f]:
            cv2.rectangle(img, (int(x), int(y)), (int(x + w), int(y + h)), colours[int(t)], -1)
        cv2.putText(img, f"{f}", (8, 22), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 1)
        writer.write(img)
    writer.release()
    return codec


def build_video_demo(folder: Path, name: str = VIDEO_DATASET, n_videos: int = 3, n_frames: int = 40,
                     seed: int = 0):
    """The video demo dataset ``name`` (replaced when it exists), its files under ``folder/videos``, with a
    video agreement run ``video``: ``(dataset, result, planted switches)``."""
    import fiftyone as fo

    from kalos_core.video.data import synthetic_videos

    from .measures.video import video_run

    videos, planted = synthetic_videos(n_videos=n_videos, n_frames=n_frames, n_raters=3, n_tracks=5, switches=2,
                                       noise=0.04, seed=seed, size=tuple(map(float, SIZE)))
    out = Path(folder) / "videos"
    out.mkdir(parents=True, exist_ok=True)
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name, persistent=True)
    width, height = SIZE
    samples = []
    for k, (video, raters) in enumerate(videos.items()):
        path = out / f"{video}.mp4"
        codec = write_video(path, raters["rater0"], n_frames, seed=seed + k)
        sample = fo.Sample(filepath=str(path), metadata=fo.VideoMetadata(   # as written (ffprobe may be absent)
            size_bytes=path.stat().st_size, mime_type="video/mp4", frame_width=width, frame_height=height,
            frame_rate=float(FPS), total_frame_count=n_frames, duration=n_frames / FPS, encoding_str=codec),
            rater_list=sorted(raters))   # who labelled the video: the forms preselect their fields
        for f in range(1, n_frames + 1):
            frame = fo.Frame()
            for rater, rows in raters.items():
                frame[f"boxes_{rater}"] = fo.Detections(detections=[
                    fo.Detection(label="object", bounding_box=[x / width, y / height, w / width, h / height],
                                 index=int(t))
                    for _, t, x, y, w, h in rows[rows[:, 0] == f].tolist()])
            sample.frames[f] = frame
        samples.append(sample)
    ds.add_samples(samples, progress=False)
    result = video_run(ds, rater_fields=[f"frames.boxes_{r}" for r in sorted(next(iter(videos.values())))],
                       run_key="video")
    return ds, result, planted
