"""``make demo`` and ``make app``: the embedded demo data set in FiftyOne.

``python fiftyone_layer/demo.py run`` draws the seeded demo scenes (kalos_core.demo_data),
imports them with the import operator's Python entry (one Detections and one
Polylines field per rater), runs agreement on the polygons, calibrates the box
threshold and runs agreement on the boxes at it (with a simulated model as one more
rater in run ``kalos_model``, and without it in run ``kalos``), builds the video demo data set
(``demo_video``: three short mp4s, three raters' tracks, planted identity switches, run ``video``),
prints the summary and how to open the App. ``python fiftyone_layer/demo.py app`` serves the App on
127.0.0.1 with this plugin loaded, FiftyOne's settings left as they are (operators run
immediately, as in any FiftyOne); ``--worker`` adds a delegated-operation worker (and
the switch that lets the App schedule runs for it).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATASET = "kalos-demo"


def plugins_dir() -> str:
    """A plugins folder holding a link to this checkout (and nothing else)."""
    path = Path(tempfile.gettempdir()) / "kalos-plugins"
    path.mkdir(exist_ok=True)
    link = path / "kalos-agreement"
    if link.is_symlink() and link.resolve() != REPO.resolve():   # another checkout's, or one since removed
        link.unlink()
    if not link.exists():
        link.symlink_to(REPO, target_is_directory=True)
    return str(path)


def run(args) -> None:
    import fiftyone as fo

    from kalos_core.agreement.config import SENSITIVITY_THRESHOLDS
    from kalos_core.demo_data import build_demo
    from kalos_core.demo_transcript import agreement_lines
    from kalos_core.thresholds import proposed

    from .measures.attributes import attribute_run
    from .measures.bae import bae_run
    from .measures.calibrate import calibrate_run
    from .measures.convergence import convergence_run
    from .imports import import_multirater_coco
    from .measures.noise_aware import noise_aware_run
    from .measures.consensus import consensus_run
    from .measures.agreement import compute_agreement_run
    from .measures.scorecard import scorecard_run
    from .measures.variations import variations_run
    from .demo_video import build_video_demo

    path = build_demo(Path(args.folder), n_images=args.images, seed=args.seed, with_images=True)
    if fo.dataset_exists(args.name):
        fo.delete_dataset(args.name)
    ds = import_multirater_coco(args.name, str(path), data_path=str(Path(args.folder) / "images"),
                                label_field="raters", label_types=("detections", "segmentations"),
                                use_polylines=True)
    ds.persistent = True
    fields = ds.get_field_schema()
    boxes = sorted(f for f in fields if f.startswith("raters_detections_"))
    polys = sorted(f for f in fields if f.startswith("raters_segmentations_"))
    lsa = SENSITIVITY_THRESHOLDS
    compute_agreement_run(ds, rater_fields=polys, run_key="kalos_polygons", lsa_thresholds=lsa, seed=args.seed)
    # calibrate the box distance and threshold first, then run agreement at the recommendation
    cal = calibrate_run(ds, rater_fields=boxes, run_key="kalos_calibration", seed=args.seed).to_dict()
    rec = cal["recommended"]                    # what the card shows and compute_agreement's form proposes
    threshold = proposed(rec["similarity_threshold"])   # the threshold as shown, which is the one used
    # a simulated model, first as one more rater of the boxes (run 'kalos_model', made before 'kalos' so
    # that the panels open on 'kalos'), then placed against the label convergence between the raters
    add_demo_model(ds, boxes[0], seed=args.seed)
    with_model = compute_agreement_run(ds, rater_fields=boxes, model_fields=["model"], run_key="kalos_model",
                                       threshold=threshold, distance=rec["distance"], bootstrap=0, seed=args.seed,
                                       calibration_key="kalos_calibration")
    res = compute_agreement_run(ds, rater_fields=boxes, run_key="kalos", threshold=threshold,
                                distance=rec["distance"], lsa_thresholds=lsa, seed=args.seed,
                                calibration_key="kalos_calibration")
    conv = convergence_run(ds, rater_fields=boxes, run_key="convergence", predictions_field="model", seed=args.seed)
    na = noise_aware_run(ds, predictions_field="model", reference_field=boxes[0], noise_fields=boxes[1:],
                         run_key="noise_aware")
    var = variations_run(ds, rater_fields=boxes, run_key="variations")
    cons = consensus_run(ds, agreement_key="kalos")
    add_demo_attributes(ds, boxes, seed=args.seed)
    attrs = attribute_run(ds, agreement_key="kalos", run_key="attributes")
    bae = bae_run(ds, rater_fields=boxes, run_key="bae", embedding_attribute="embedding")
    cards = scorecard_run(ds, rater_fields=boxes, run_key="scorecard")
    print(f"FiftyOne dataset {args.name!r}: {len(ds)} samples, raters {', '.join(res.vitality) or '-'}")
    print(agreement_lines(rec, threshold, res))
    cf, ap = conv.to_dict(), na.to_dict()["ap"]["50:95"]
    print("\nthe model as one more rater (run 'kalos_model'): "
          + with_model.model_comparison["per_image"]["model"]["verdict"])
    print(f"label convergence (run 'convergence'), percent: mAP between raters {cf['full_set']['map']:.2f}, interval "
          f"{cf['bootstrap']['ci_normal'][0]:.2f} - {cf['bootstrap']['ci_normal'][1]:.2f}; simulated model "
          f"{cf['model']['map']:.2f} ({cf['model']['placement']['ci_normal']})")
    print(f"noise-aware AP of the model (run 'noise_aware'), percent: "
          f"{ap['lower']:.2f} <= {ap['ap']:.2f} <= {ap['upper']:.2f}")
    vc, missed = var.counts["0.5"], sorted(var.missed_by("0.5").items(), key=lambda kv: -kv[1])
    print("variation types at IoU 0.5 (run 'variations'), per label (majority convention): "
          + ", ".join(f"{k} {v}" for k, v in vc.items()))
    print("  missed per pair (the other raters' labels each rater did not draw): "
          + ", ".join(f"{r} {n}" for r, n in missed))
    print(f"consensus of run 'kalos' (field 'kalos_consensus'): {len(cons.labels)} labels, "
          f"{len(cons.review)} units for review")
    print("attribute agreement on the units of run 'kalos' (run 'attributes'): "
          + ", ".join(f"{name} α {a['alpha']:.3f} ({a['metric']})" for name, a in attrs.per_attribute.items()))
    print(f"behaviour alignment of a simulated per-rater embedding (run 'bae'): BAE {bae.bae:.3f}")
    print("rater scorecards against the other raters' majority (run 'scorecard'), F1 at IoU 0.5: "
          + ", ".join(f"{r['rater']} {r['f1']:.3f}" for r in cards.rows if r["class"] == "(all)"))
    masks = add_demo_masks(f"{args.name}-masks", Path(args.folder) / "masks", seed=args.seed)
    print(f"semantic masks (dataset {masks.name!r}, run 'masks'): pixel alpha "
          f"{masks.load_run_results('masks').alpha:.3f} over {len(masks)} street scenes, 3 raters")
    video, vres, planted = build_video_demo(Path(args.folder), name=args.video_name, seed=args.seed)
    p = vres.pooled
    print(f"video agreement (dataset {args.video_name!r}, run 'video'): {vres.n_videos} videos, {vres.n_frames} "
          f"frames, mean α {vres.mean_alpha:.3f}; HOTA {p['HOTA']:.3f}, IDF1 {p['IDF1']:.3f}, "
          f"{p['id_switches']} identity switches ({len(planted)} planted)")
    low = ds.sort_by("kalos_alpha").first()
    print(f"\nlowest-agreement sample: {low.filepath} (its own per-image alpha {low['kalos_alpha']:.3f})")
    print("\nOpen it in the App:  make app   (then http://127.0.0.1:5151, sort by kalos_alpha,"
          " or run 'KaLOS: browse disagreements' from the operator browser)")


#: how often each demo rater flips the occluded flag the scene implies (the careful rater rarely, the sloppy often)
FLIP = {"careful": 0.03, "sloppy": 0.25, "confuser": 0.1, "misses_small": 0.1}


def add_demo_attributes(ds, fields, seed: int = 0) -> None:
    """Per-label attributes on the box raters, seeded, for attribute agreement and BAE: ``occluded``
    (true for boxes in the lower third of the image, as a scene would imply, flipped per rater at the
    rate :data:`FLIP` gives), ``truncated`` (the box touches the image border; never flipped) and an
    ``embedding`` (a 4-vector per label around a per-rater centre: a model's view of that rater)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = {f: rng.normal(size=4) for f in fields}
    for f in fields:
        rater = f.rsplit("_", 1)[-1] if f.rsplit("_", 1)[-1] in FLIP else next(
            (r for r in FLIP if f.endswith(r)), None)
        flip = FLIP.get(rater, 0.1)
        boxes = ds.values(f"{f}.detections.bounding_box")
        occluded = [[bool((b[1] + b[3] / 2 > 2 / 3) != (rng.random() < flip)) for b in row or []] for row in boxes]
        truncated = [[bool(b[0] <= 0.01 or b[1] <= 0.01 or b[0] + b[2] >= 0.99 or b[1] + b[3] >= 0.99)
                      for b in row or []] for row in boxes]
        vectors = [[(centres[f] + rng.normal(scale=0.5, size=4)).tolist() for _ in row or []] for row in boxes]
        ds.set_values(f"{f}.detections.occluded", occluded)
        ds.set_values(f"{f}.detections.truncated", truncated)
        ds.set_values(f"{f}.detections.embedding", vectors)


def add_demo_masks(name: str, folder: Path, seed: int = 0, n: int = 8):
    """A small seeded semantic-mask data set ``name``: ``n`` street scenes (road band, 0-2 cars) drawn as
    PNGs into ``folder``, and three raters' class maps (``mask_careful``, ``mask_sloppy``: boundaries
    off by a few pixels, ``mask_misses``: leaves out a car) as Segmentation fields; masks run ``masks``."""
    import fiftyone as fo
    import numpy as np
    from PIL import Image

    from .measures.masks import mask_run

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    h, w, colours = 120, 160, np.array([[96, 140, 80], [70, 70, 76], [200, 40, 40]], np.uint8)
    samples = []
    for i in range(n):
        top = int(rng.integers(55, 75))
        truth = np.zeros((h, w), np.uint8)
        truth[top:] = 1
        cars = [(int(rng.integers(top - 12, h - 25)), int(rng.integers(0, w - 40))) for _ in range(i % 3)]  # 0-2
        for y, x in cars:
            truth[y:y + 20, x:x + 36] = 2
        path = folder / f"scene_{i:02d}.png"
        Image.fromarray(colours[truth]).save(path)
        sample = fo.Sample(filepath=str(path.resolve()))
        for rater, off in (("careful", 1), ("sloppy", 4), ("misses", 2)):
            m = np.zeros_like(truth)
            m[top + int(rng.integers(-off, off + 1)):] = 1
            for k, (y, x) in enumerate(cars):
                if rater == "misses" and k == 0:
                    continue
                dy, dx = rng.integers(-off, off + 1, 2)
                m[max(y + dy, 0):y + dy + 20, max(x + dx, 0):x + dx + 36] = 2
            sample[f"mask_{rater}"] = fo.Segmentation(mask=m)
        samples.append(sample)
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name, persistent=True)
    ds.add_samples(samples, progress=False)
    ds.default_mask_targets = {1: "road", 2: "car"}
    ds.save()
    mask_run(ds, mask_fields=["mask_careful", "mask_sloppy", "mask_misses"], run_key="masks",
             classes=("background", "road", "car"))
    return ds


def add_demo_model(ds, field: str, seed: int = 0, jitter: float = 0.1, drop: float = 0.1) -> None:
    """A simulated model: ``field``'s boxes moved by up to ``jitter`` of their size per edge, a share
    ``drop`` left out, with seeded confidences (higher for boxes moved less)."""
    import fiftyone as fo
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for row in ds.values(f"{field}.detections"):
        dets = []
        for d in row or []:
            if rng.random() < drop:
                continue
            x, y, w, h = d.bounding_box
            e = rng.uniform(-jitter, jitter, 4) * np.array([w, h, w, h])
            box = [x + e[0], y + e[1], max(w + e[2] - e[0], 1e-3), max(h + e[3] - e[1], 1e-3)]
            score = float(np.clip(1.0 - np.abs(e).sum() / (w + h) + rng.normal(0, 0.1), 0.01, 0.99))
            dets.append(fo.Detection(label=d.label, bounding_box=box, confidence=score))
        rows.append(fo.Detections(detections=dets))
    ds.set_values("model", rows)


def start_worker() -> subprocess.Popen:
    """``fiftyone delegated launch`` in a child process (same environment): it runs what the App's
    "Schedule" button queues, for this plugin's operators and FiftyOne's own alike."""
    code = "import sys; from fiftyone.core.cli import main; sys.argv = ['fiftyone', 'delegated', 'launch']; main()"
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)


def app_environment(worker: bool) -> dict:
    """The environment variables ``app`` sets (unless already set): this plugin's folder and,
    only with a worker, FiftyOne's server-wide legacy-orchestrator switch. That switch makes
    the App offer "Schedule" for every operator that allows delegation, FiftyOne's own
    included, and pick it by default where the operator says so (``default_choice_to_delegated``,
    e.g. clone / rename sample field): without a worker nothing would run them."""
    env = {"FIFTYONE_PLUGINS_DIR": plugins_dir()}
    if worker:
        env["FIFTYONE_ALLOW_LEGACY_ORCHESTRATORS"] = "true"
    return env


def stop_app_servers(grace: float = 3.0) -> None:
    """Stop the App servers this process started, now and within ``grace`` seconds each.

    FiftyOne runs its server behind a watcher process (``fiftyone/service/main.py``) that stops
    it when this process closes the watcher's stdin, i.e. at interpreter exit, and then waits
    for the server's own graceful shutdown without a bound (open App tabs keep it going). Here
    stdin is closed at once and, if the server is still up after ``grace`` seconds, the
    watcher's process group (it calls ``setpgrp``, and the server is its child) is killed, so
    the port is free within seconds of Ctrl-C or a plain ``kill``."""
    import psutil
    from fiftyone.core.session import session as fos_session

    services = getattr(fos_session, "_server_services", {})
    for port in list(services):
        child = getattr(services.pop(port), "child", None)
        if child is None:
            continue
        try:
            child.stdin.close()
            child.wait(timeout=grace)
        except (psutil.TimeoutExpired, OSError):   # still shutting down, or the pipe already gone
            try:
                if hasattr(os, "killpg"):
                    os.killpg(child.pid, signal.SIGKILL)
                else:
                    child.kill()
            except (ProcessLookupError, PermissionError):
                pass
            child.wait()


def app(args) -> None:
    """Serve the App as FiftyOne does (operators run immediately); with ``--worker``, also
    a worker for scheduled runs, stopped with the App."""
    for key, value in app_environment(args.worker).items():
        os.environ.setdefault(key, value)
    import fiftyone as fo

    if not fo.dataset_exists(args.name):
        sys.exit(f"no dataset {args.name!r}: run `make demo` first")
    worker = start_worker() if args.worker else None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))   # a plain `kill` also stops the worker and server
    try:
        session = fo.launch_app(fo.load_dataset(args.name), address="127.0.0.1", port=args.port, remote=True)
        print(f"App on http://127.0.0.1:{args.port}  (Ctrl-C to stop)"
              + ("; scheduled operations run in the worker started with it" if worker else ""))
        session.wait(-1)
    finally:
        stop_app_servers()
        if worker is not None:
            worker.terminate()
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.kill()


class _Tee:
    """A stdout that also keeps what it wrote."""

    def __init__(self, out):
        self.out, self.parts = out, []

    def write(self, text):
        self.parts.append(text)
        return self.out.write(text)

    def flush(self):
        self.out.flush()

    def __getattr__(self, name):   # encoding, isatty, ...: the real stdout's (progress bars ask)
        return getattr(self.out, name)


def run_and_write_readme(args) -> None:
    """:func:`run`, then its output written as the README's ``make demo`` transcript
    (:func:`kalos_core.demo_transcript.readme_block`; ``make demo-transcript``)."""
    import contextlib

    from kalos_core.demo_transcript import MARKER, readme_block
    from kalos_core.measure_docs import with_block

    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        run(args)
    readme = REPO / "README.md"
    readme.write_text(with_block(readme.read_text(), MARKER, readme_block("".join(tee.parts), f"{REPO}/")))
    print(f"wrote the make demo transcript into {readme}")


def main(argv=None) -> None:
    from .demo_video import VIDEO_DATASET

    ap = argparse.ArgumentParser(prog="python fiftyone_layer/demo.py")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--folder", default=str(REPO / "data" / "demo"))
    r.add_argument("--images", type=int, default=40)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--name", default=DATASET)
    r.add_argument("--write-readme", action="store_true",
                   help="also write what it prints into README.md as the make demo transcript")
    r.add_argument("--video-name", default=VIDEO_DATASET, help="the video demo dataset's name")
    a = sub.add_parser("app")
    a.add_argument("--name", default=DATASET)
    a.add_argument("--port", type=int, default=5151)
    a.add_argument("--worker", action="store_true",
                   help="also start `fiftyone delegated launch` and let the App schedule runs for it (for every "
                        "operator that allows delegation, FiftyOne's own included; they then default to Schedule)")
    args = ap.parse_args(argv)
    if args.command == "app":
        app(args)
    else:
        run_and_write_readme(args) if args.write_readme else run(args)


def as_plugin_module(module: str = "demo") -> None:
    """Run ``fiftyone_layer/<module>.py`` as the plugin's own module, under the name FiftyOne gives it
    (``fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.<module>``): its imports then reach the
    FiftyOne layer as inside the App, with one copy of each module."""
    import importlib.util
    import runpy

    os.environ.setdefault("FIFTYONE_PLUGINS_DIR", plugins_dir())
    from fiftyone.plugins.context import _ensure_parent_modules, _get_plugin_module_name

    name = _get_plugin_module_name("@kalos/agreement", REPO.name)
    _ensure_parent_modules(name, str(REPO))
    spec = importlib.util.spec_from_file_location(name, REPO / "__init__.py")   # the plugin's package
    sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules[name])
    runpy.run_module(f"{name}.fiftyone_layer.{module}", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main() if __package__ else as_plugin_module()   # `python fiftyone_layer/demo.py run|app`
