"""Every command-line command × every class of bad input: what the user sees (docs/bad_input.md).

Run ``python benchmarks/bad_input_table.py`` to rewrite the page; ``tests/core/test_bad_input_table.py``
checks it is current and that no cell is an internal error. Each cell runs the command in-process
(``kalos_core.cli.main``) on tiny inline data and records the exit status and the first error line,
or, for an answer, the first two lines of stdout. A class a command cannot be given is "n/a".
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import signal
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kalos_core.cli import build_parser, main  # noqa: E402
from kalos_core.measure import MEASURE_MODULES, get_measure  # noqa: E402

DOC = ROOT / "docs" / "bad_input.md"
COMMANDS = list(MEASURE_MODULES)
SECONDS = 8           # CPU seconds: a cell running longer is recorded as a time-out (a failure)
RATERS = ("a", "b", "c")


def _box(x, y, w, h):
    return {"bbox": [x, y, w, h], "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]],
            "area": w * h, "iscrowd": 0}


def good_coco(identical: bool = False, seed: int = 0) -> dict:
    """3 images of 100 × 100, raters a, b, c: three objects each, jittered by rater (seeded)."""
    rng = np.random.default_rng(seed)
    images, anns = [], []
    for i in (1, 2, 3):
        images.append({"id": i, "file_name": f"{i}.jpg", "width": 100, "height": 100, "rater_list": list(RATERS)})
        for k, (x, y, w, h, c) in enumerate([(10, 10, 20, 20, 1), (50, 50, 30, 20, 2), (20, 60, 15, 25, 1)]):
            for r in RATERS:
                dx, dy = (0.0, 0.0) if identical else rng.normal(0, 1.5, 2).round(1)
                anns.append({"id": len(anns) + 1, "image_id": i, "category_id": c, "rater_id": r,
                             **_box(float(x + dx + i), float(y + dy), float(w), float(h)),
                             "attributes": {"occluded": k == 2}})
    return {"images": images, "annotations": anns,
            "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}]}


def _with(change):
    coco = good_coco()
    change(coco)
    return coco


def _set_lists(lists):
    def change(coco):
        for im, rl in zip(coco["images"], lists):
            im["rater_list"] = rl
        coco["annotations"] = [a for a in coco["annotations"]
                               if a["rater_id"] in coco["images"][a["image_id"] - 1]["rater_list"]]
    return change


def _drop(rater):
    def change(coco):
        coco["annotations"] = [a for a in coco["annotations"] if a["rater_id"] != rater]
    return change


def _first_ann(**values):
    def change(coco):
        coco["annotations"][0].update(values)
    return change


def predictions(score="ok") -> list:
    """A model's results: rater a's boxes, scores 0.9 (or ``score`` in their place; "absent": no score)."""
    out = []
    for a in good_coco()["annotations"]:
        if a["rater_id"] == "a":
            p = {"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"], "score": 0.9}
            if score == "absent":
                del p["score"]
            elif score != "ok":
                p["score"] = score
            out.append(p)
    return out


def _keypoint_predictions() -> list:
    return [{"image_id": 1, "category_id": 1, "keypoints": [10, 10, 2, 20, 20, 2], "score": 0.9}]


# class -> (what, value): "data" a COCO dict or raw text for the labels file, "task" that data's --task,
# "predictions" a results list, "option" (candidate flags, value), "int option" a value for an int parameter
BOW_TIE = [[10, 10, 40, 40, 40, 10, 10, 40]]
CLASSES = {
    "valid input (reference)": {"data": good_coco()},
    "empty data (no images)": {"data": {"images": [], "annotations": [], "categories": [{"id": 1, "name": "cat"}]}},
    "non-overlapping raters (one per image)": {"data": _with(_set_lists([["a"], ["b"], ["c"]]))},
    "one rater": {"data": _with(_set_lists([["a"]] * 3))},
    "a rater with no labels": {"data": _with(_drop("c"))},
    "raters listed, nobody labels": {"data": _with(lambda c: c.update(annotations=[]))},
    "identical raters": {"data": good_coco(identical=True)},
    "rater_list a string": {"data": _with(lambda c: [im.update(rater_list="a,b,c") for im in c["images"]])},
    "deep JSON (100k nested lists)": {"data": "[" * 100_000 + "]" * 100_000},
    "bow-tie polygon (segm)": {"data": _with(_first_ann(segmentation=BOW_TIE)), "task": "segm"},
    "RGB mask (RLE size h×w×3, segm)": {"data": _with(_first_ann(segmentation={"size": [100, 100, 3],
                                                                                "counts": "0"})), "task": "segm"},
    "predictions without scores": {"predictions": predictions("absent")},
    "predictions with NaN scores": {"predictions": predictions(float("nan"))},
    "predictions with score < 0": {"predictions": predictions(-0.5)},
    "predictions with score > 1": {"predictions": predictions(1.5)},
    "predictions of another label type (keypoints)": {"predictions": _keypoint_predictions()},
    "bootstrap 0": {"option": (["--bootstrap"], "0")},
    "bootstrap -1": {"option": (["--bootstrap"], "-1")},
    "bootstrap 10^12": {"option": (["--bootstrap"], str(10 ** 12))},
    "threshold out of range (1.5)": {"option": (["--threshold", "--iou-min"], "1.5")},
    "unknown distance name": {"option": (["--distance", "--distances"], "nosuch")},
    "seed -1": {"option": (["--seed"], "-1")},
    "seed 2^64": {"option": (["--seed"], str(2 ** 64))},
    "negative integer option": {"int option": "-3"},
    "enormous integer option (10^12)": {"int option": str(10 ** 12)},
}


#: classes every command must refuse (exit status not 0); simulate reads any COCO file, rater keys ignored
MUST_REFUSE = {"empty data (no images)", "non-overlapping raters (one per image)", "one rater", "rater_list a string",
               "deep JSON (100k nested lists)", "RGB mask (RLE size h×w×3, segm)", "predictions without scores",
               "predictions with NaN scores", "predictions with score < 0", "predictions with score > 1",
               "predictions of another label type (keypoints)", "bootstrap -1", "bootstrap 10^12",
               "threshold out of range (1.5)", "unknown distance name", "seed -1", "negative integer option"}
RATERS_IGNORED = {("simulate", c) for c in ("non-overlapping raters (one per image)", "one rater", "rater_list a string")}
#: cells of MUST_REFUSE classes whose answer is documented as right: agreement's model as a rater counts a
#: missing score as 1 (docs/cli.md "agreement: the output JSON", ``--score-threshold`` help, ``add_model_rater``)
ANSWER_ALLOWED = {("agreement", "predictions without scores")}


def failure(command: str, name: str, cell) -> str | None:
    """Why a cell is wrong: an internal error, a time-out, or an answer where a refusal is due; else None."""
    if cell is None:
        return None
    rc, text = cell
    if rc in ("INTERNAL", "TIMEOUT"):
        return f"{rc}: {text}"
    if rc == 0 and name in MUST_REFUSE and (command, name) not in RATERS_IGNORED | ANSWER_ALLOWED:
        return f"answered instead of refusing: {text}"
    return None


def _flags(command: str) -> set[str]:
    sub = next(a for a in build_parser([command])._actions if hasattr(a, "choices") and a.choices)
    return {s for action in sub.choices[command]._actions for s in action.option_strings}


def _int_flag(command: str) -> str | None:
    """The first integer parameter's flag that is neither the seed nor the bootstrap count."""
    return next((p.cli_flag for p in get_measure(command).params
                 if p.kind == "int" and p.name not in ("seed", "bootstrap") and p.cli_flag), None)


class _TimeOut(BaseException):   # not an Exception: the CLI's guard must not catch it
    pass


def _alarm(signum, frame):
    raise _TimeOut


#: classes about a COCO file's rater_list: a video's raters are the folders holding a file of it
VIDEO_NA = {"non-overlapping raters (one per image)", "rater_list a string"}


def video_folders(data, root: Path) -> Path:
    """The labels as the video command reads them: one folder per rater, one MOT file ``v.txt`` whose
    frames are the images and whose track ids number each rater's boxes within an image (raw text:
    rater a's file, beside a good rater b)."""
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    if isinstance(data, str):
        for rater, text in (("a", data), ("b", "1,1,10,10,20,20,1,-1,-1,-1\n")):
            (root / rater).mkdir()
            (root / rater / "v.txt").write_text(text)
        return root
    lines: dict = {r: [] for im in data["images"] for r in im.get("rater_list") or ()}
    seen: dict = {}
    for a in data["annotations"]:
        k = seen[a["image_id"], a["rater_id"]] = seen.get((a["image_id"], a["rater_id"]), 0) + 1
        lines.setdefault(a["rater_id"], []).append(f"{a['image_id']},{k},{','.join(map(repr, a['bbox']))},1,-1,-1,-1\n")
    for rater, rows in lines.items():
        (root / rater).mkdir()
        (root / rater / "v.txt").write_text("".join(rows))
    return root


def argv_for(command: str, case: dict, folder: Path, name: str = "") -> list[str] | None:
    """The command line of one cell, or None where the class does not apply to the command."""
    flags = _flags(command)
    if command == "masks":       # folders of class maps, not a labels file: only the option classes apply
        return None if {"data", "predictions", "task"} & set(case) else _masks_argv(case, flags, folder)
    data = case.get("data", good_coco())
    task = case.get("task")
    if task and task not in get_measure(command).tasks:
        return None
    if command == "video" and name in VIDEO_NA:
        return None
    labels = folder / f"{command}-labels.json"
    labels.write_text(data if isinstance(data, str) else json.dumps(data))
    extra = ["--task", task] if task else []
    if "predictions" in case and "--predictions" not in flags:
        return None
    preds = folder / f"{command}-predictions.json"
    preds.write_text(json.dumps(case.get("predictions", predictions())))
    if "option" in case:
        names, value = case["option"]
        flag = next((f for f in names if f in flags), None)
        if flag is None:
            return None
        extra += [flag, value]
    if "int option" in case:
        flag = _int_flag(command)
        if flag is None:
            return None
        extra += [flag, case["int option"]]
    if "--embeddings" in flags:
        (folder / "embeddings.json").write_text(json.dumps({"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]}))
        extra += ["--embeddings", str(folder / "embeddings.json")]
    if "--bootstrap" in flags and "--bootstrap" not in extra:
        extra += ["--bootstrap", "5"]   # small and fast; the bootstrap classes set their own
    out = ["--output", str(folder / f"{command}-out.json")]
    if command == "noise-aware":
        return [command, "--reference", str(labels), "--predictions", str(preds), *extra, *out]
    if command == "video":
        return [command, str(video_folders(data, folder / "video-raters")), *extra, *out]
    with_preds = ["--predictions", str(preds)] if "predictions" in case else []
    return [command, str(labels), *with_preds, *extra, *out]


def _masks_argv(case: dict, flags: set, folder: Path) -> list[str] | None:
    """The masks command on two raters' folders of one 8-bit PNG class map each, with the case's option."""
    import numpy as np
    from PIL import Image

    dirs = []
    for k, rater in enumerate(("a", "b")):
        (folder / "masks" / rater).mkdir(parents=True, exist_ok=True)
        m = np.zeros((16, 16), np.uint8)
        m[4:12, 4 + k:12 + k] = 1
        Image.fromarray(m).save(folder / "masks" / rater / "x.png")
        dirs.append(str(folder / "masks" / rater))
    extra = []
    if "option" in case:
        flag = next((f for f in case["option"][0] if f in flags), None)
        if flag is None:
            return None
        extra = [flag, case["option"][1]]
    if "int option" in case:
        flag = _int_flag("masks")
        extra = [flag, case["int option"]] if flag else None
    return None if extra is None else ["masks", *dirs, *extra, "--output", str(folder / "masks-out.json")]


def run_cell(argv: list[str]) -> tuple[int | str, str]:
    """``(exit status, what the user sees)``; status "INTERNAL" for an escaped exception or
    an unexpected error, "TIMEOUT" past :data:`SECONDS`."""
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGPROF, _alarm)
    signal.setitimer(signal.ITIMER_PROF, SECONDS)   # CPU time: the same cells time out on a busy machine
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 2
    except _TimeOut:
        return "TIMEOUT", f"still running after {SECONDS} s of CPU time"
    except BaseException as e:  # noqa: BLE001 - recorded as the failure it is
        return "INTERNAL", f"{type(e).__name__}: {e}"[:160]
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)
    text = err.getvalue() if rc else out.getvalue()
    line = " ".join(re.sub(r"\(\d+(\.\d+)? s\)", "", _seen(text, bool(rc))).split())   # no timings: reproducible
    if "Traceback" in text or "error: unexpected" in text:
        return "INTERNAL", line[:200]
    return rc, line[:200]


def _seen(text: str, failed: bool) -> str:
    """An error's first ``error:`` line (with the first problem where it lists them), else the first line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if failed:
        k = next((k for k, ln in enumerate(lines) if "error:" in ln), 0)
        lines = lines[k:]
        if lines:
            lines[0] = lines[0].split(": error: ", 1)[-1].removeprefix("error: ")
        if len(lines) > 1 and lines[0].endswith(":"):
            return f"{lines[0]} {lines[1]}"
    return " / ".join(lines[:2])   # an answer: its first two lines (agreement: the counts, then mean α)


def table() -> dict[tuple[str, str], tuple[int | str, str] | None]:
    """``{(command, class): (status, text) or None (n/a)}`` for every command and class."""
    cells = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, case in CLASSES.items():
            for command in COMMANDS:
                argv = argv_for(command, copy.deepcopy(case), folder, name)
                cell = None if argv is None else run_cell(argv)
                cells[command, name] = cell and (cell[0], cell[1].replace(f"{folder}/", "…/"))
    return cells


def _cell(value) -> str:
    if value is None:
        return "n/a"
    rc, text = value
    text = text.replace("|", "\\|")
    return f"**{rc}** {text}" if rc in ("INTERNAL", "TIMEOUT") else f"{rc}: {text}"


def markdown(cells) -> str:
    lines = ["# Bad input: what every command shows",
             "",
             "Generated by `python benchmarks/bad_input_table.py` (regenerate after changing an error "
             "message; `tests/core/test_bad_input_table.py` fails when this page is not current).",
             "",
             "Each cell: the exit status, then the first error line (with the first problem it lists) or the first two lines of stdout "
             "(an answer); exit 2 is a refusal naming the input at fault. **INTERNAL** / **TIMEOUT** mark "
             "cells still to fix (the test's `KNOWN_FAILING`). File names are shortened to `…/`.",
             ""]
    for command in COMMANDS:
        lines += [f"## `{command}`", "", "| bad input | what the user sees |", "|---|---|"]
        lines += [f"| {name} | {_cell(cells[command, name])} |" for name in CLASSES]
        lines.append("")
    return "\n".join(lines) + _imports_section()


def _imports_section() -> str:
    """The page's imports section, as benchmarks/import_bad_input_table.py wrote it (kept)."""
    text = DOC.read_text() if DOC.exists() else ""
    mark = "<!-- imports:"
    return "\n" + text[text.index(mark):] if mark in text else ""


if __name__ == "__main__":
    DOC.write_text(markdown(table()))
    print(f"wrote {DOC}")
