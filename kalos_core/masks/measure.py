"""The semantic-mask measure, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core masks RATER_DIR RATER_DIR ...`` reads one folder of class maps per rater
(the folder name is the rater; the same file name in each is the same image; 8/16-bit PNG or
.npy, value = class index), or one Label Studio JSON export of brush masks (one class map per task
and annotator, :mod:`kalos_core.masks.label_studio`), and writes ``MaskResult.to_dict()``; ``--consensus-dir`` writes the
consensus maps there as 8-bit (16-bit past 255 classes) PNGs under the images' names.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ..measure import CliOption, Measure, MeasureData
from .engine import MaskConfig, MaskResult, mask_steps, masks_dataset
from .label_studio import read_label_studio_brush
from .reader import read_mask_folders


def steps(data: MeasureData, config: MaskConfig):
    """The measure on ``data.dataset`` (a ``classmap`` data set) and ``data.options["masks"]``; the
    consensus maps written into ``data.options["consensus_dir"]`` where given (the CLI's option);
    the pixel-disagreement maps kept where ``data.options["disagreement_maps"]`` and the classes
    named by ``data.options["class_names"]`` (the plugin's: the fields' ``mask_targets``)."""
    result = yield from mask_steps(data.dataset, data.options.get("masks") or {}, config,
                                   bool(data.options.get("disagreement_maps")), data.options.get("class_names"))
    folder = data.options.get("consensus_dir")
    if folder is not None:
        write_consensus(result, Path(folder))
    return result


def read(args: argparse.Namespace) -> MeasureData | None:
    """The raters' folders, or a Label Studio JSON export (None after an error line: exit 2)."""
    try:
        if len(args.folders) == 1 and args.folders[0].suffix.lower() == ".json":
            dataset, masks = read_label_studio_brush(args.folders[0], getattr(args, "classes", None))
        else:
            dataset, masks = read_mask_folders(args.folders)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return None
    return MeasureData(dataset, options={"masks": masks, "consensus_dir": args.consensus_dir})


def write_consensus(result: MaskResult, folder: Path) -> list[Path]:
    """The consensus maps as PNGs named by image (8-bit, 16-bit past 255), and with ``--probabilities``
    each pixel's probability of its class as ``<image>_probability.png`` (percent, 8-bit)."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for image, arr in result.consensus.items():
        path = folder / f"{image}.png"
        Image.fromarray(arr).save(path)
        written.append(path)
    for image, arr in result.probability.items():   # --probabilities: percent, 8-bit
        path = folder / f"{image}_probability.png"
        Image.fromarray(arr).save(path)
        written.append(path)
    return written


def summary(result: MaskResult, seconds: float | None = None) -> str:
    """Plain text: α pooled and per class, each class's pooled Dice, the raters' STAPLE performance."""
    fmt = lambda x: "—" if x is None else f"{x:.4f}"   # noqa: E731
    lines = [f"images {len(result.per_image)}   raters {len(result.raters)}   pixels {result.n_pixels}   "
             f"alpha {fmt(result.alpha)}" + (f"   ({seconds:.2f} s)" if seconds is not None else "")]
    for k, name in result.classes.items():
        dice = [p[k]["dice"] for p in result.pairs.values() if k in p and p[k]["dice"] is not None]
        lines.append(f"class {name}: alpha {fmt(result.alpha_per_class.get(k))}   "
                     f"mean pair Dice {fmt(float(np.mean(dice)) if dice else None)}")
    for r, by_class in result.per_rater.items():
        cells = [f"{result.classes[k]} {fmt(v.get('sensitivity'))}/{fmt(v.get('specificity'))}"
                 for k, v in by_class.items() if "sensitivity" in v]
        if cells:
            lines.append(f"{r}: STAPLE sensitivity/specificity  " + "  ".join(cells))
    return "\n".join(lines)


def example(data: MeasureData) -> MeasureData:
    """Three raters' seeded class maps of four small images (the registry-wide tests)."""
    rng = np.random.default_rng(0)
    masks = {r: {} for r in ("ann", "bob", "cy")}
    for i in range(4):
        truth = np.zeros((24, 32), np.uint8)
        truth[4 + i:16, 6:20 + i] = 1
        truth[8:12, 10:14] = 2
        for k, r in enumerate(masks):
            m = truth.copy()
            flip = rng.random(m.shape) < 0.04 * (k + 1)
            m[flip] = rng.integers(0, 3, int(flip.sum()))
            masks[r][f"img{i}"] = m
    return MeasureData(masks_dataset(masks), options={"masks": masks})


MEASURE = Measure(
    name="masks",
    help="semantic masks: pixel alpha, Dice / Jaccard and boundary measures per class and rater pair, "
         "STAPLE consensus",
    config=MaskConfig, steps=steps, result=MaskResult, method="kalos_masks", conventions=("mask_pixels",),
    tasks=("masks",), summary=summary, read=read, example=example,
    cli_options=(
        CliOption(("folders",), {"type": Path, "nargs": "+", "metavar": "RATER_DIR",
                                 "help": "one folder of class maps per rater (.png / .npy, same file names), "
                                         "or one Label Studio JSON export of brush masks"}),
        CliOption(("--consensus-dir",), {"type": Path, "help": "write the consensus maps here as PNGs"}),
    ))
