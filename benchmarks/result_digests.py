"""SHA-256 of every command's result JSON on the real LVIS file (and the 291k-box synthetic file).

A refactoring that must not change behaviour is checked by running this before and after and
comparing the two listings (``diff``)::

    .venv/bin/python benchmarks/result_digests.py > before.txt
    ... change the code ...
    .venv/bin/python benchmarks/result_digests.py > after.txt && diff before.txt after.txt

``--quick`` leaves out the 5,000-image synthetic file. Needs ``../shared/data`` beside the checkout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LVIS = REPO.parent / "shared" / "data" / "lvis_v1_val_double_annotations_subset200.json"


def predictions_from(path: Path, rater: str, out: Path) -> Path:
    """A COCO results file made of one rater's boxes (score 0.9), as a model's predictions."""
    coco = json.loads(path.read_text())
    preds = [{"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"], "score": 0.9}
             for a in coco["annotations"] if str(a.get("rater_id")) == rater]
    out.write_text(json.dumps(preds))
    return out


def digest(path: Path) -> str:
    """SHA-256 of the file's bytes; where the result records its own run time (``"seconds"``,
    which differs every run), of the file written again without it."""
    data = path.read_bytes()
    if b'"seconds"' in data:
        d = json.loads(data)
        d.pop("seconds", None)
        data = json.dumps(d, indent=1).encode()
    return hashlib.sha256(data).hexdigest()


def commands(tmp: Path, quick: bool) -> list[tuple[str, list[str]]]:
    raters = sorted({str(a["rater_id"]) for a in json.loads(LVIS.read_text())["annotations"]})
    preds = predictions_from(LVIS, raters[-1], tmp / "preds.json")
    f = str(LVIS)
    cmds = [
        ("agreement bbox", ["agreement", f, "--task", "bbox", "--lsa", "0.3,0.5,0.7", "--include-labels"]),
        ("agreement segm", ["agreement", f, "--task", "segm", "--include-labels"]),
        ("agreement shm", ["agreement", f, "--solver", "shm", "--cost", "neg", "--bootstrap", "50"]),
        ("agreement ahc giou", ["agreement", f, "--solver", "ahc", "--distance", "giou", "--threshold", "0.6"]),
        ("agreement model", ["agreement", f, "--predictions", str(preds), "--model-name", "m"]),
        ("calibrate", ["calibrate", f, "--bootstrap", "20", "--stratify"]),
        ("braylan", ["braylan", f]),
        ("consensus", ["consensus", f, "--support", "0.5"]),
        ("variations", ["variations", f, "--include-labels"]),
        ("convergence", ["convergence", f, "--bootstrap", "50", "--predictions", str(preds)]),
        ("noise-aware", ["noise-aware", "--reference", f, "--predictions", str(preds), "--rater", raters[0]]),
        ("fit-noise", ["fit-noise", f]),
        ("simulate bbox", ["simulate", f, "--raters", "3", "--seed", "1"]),
        ("simulate segm schools", ["simulate", f, "--task", "segm", "--schools", "2,1", "--defiant",
                                   "--magnitude", "0.5", "--reference-rater", raters[0]]),
    ]
    if not quick:
        from kalos_core.demo_data import make_synthetic_boxes

        syn = tmp / "synthetic_5000.json"
        syn.write_text(json.dumps(make_synthetic_boxes(n_images=5000, n_raters=3, objects_per_image=20, seed=0)))
        cmds.append(("synthetic 291k boxes", ["agreement", str(syn), "--lsa", "0.3", "--include-labels"]))
    return cmds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the LVIS file")
    args = ap.parse_args()
    if not LVIS.exists():
        print(f"needs {LVIS}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for k, (name, argv) in enumerate(commands(tmp, args.quick)):
            out = tmp / f"out_{k}.json"
            proc = subprocess.run([sys.executable, "-m", "kalos_core", *argv, "--output", str(out)], cwd=REPO,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{name:24} exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
                continue
            print(f"{name:24} {digest(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
