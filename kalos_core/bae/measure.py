"""The BAE measure, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core bae FILE.json --embeddings EMB.json --task bbox ...`` writes
``BAEResult.to_dict()``: ``{"bae", "raters", "true", "model", "difference", "map_true",
"map_model", ...}``. ``EMB.json`` holds a model's representation of each rater: ``{rater:
vector}``, or ``{rater: [vector per sample, ...]}`` (averaged, the paper's Eq. 5).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..measure import CliOption, Measure, MeasureData
from .engine import BAEConfig, BAEResult, bae_steps, rater_vectors


def steps(data: MeasureData, config: BAEConfig):
    """BAE of ``data.dataset`` against ``data.options["embeddings"]`` as progress steps."""
    return bae_steps(data.dataset, data.options.get("embeddings") or {}, config)


class FileValue(dict):
    """A dict read from a file, with the file's path (``source_path``: ``--output`` never overwrites it)."""

    source_path: str | None = None


def read_embeddings(path: str) -> dict:
    """``--embeddings``: the JSON file's ``{rater: vector(s)}``, checked (argparse's usage error if not)."""
    try:
        embeddings = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {e}") from None
    if not isinstance(embeddings, dict) or not embeddings:
        raise argparse.ArgumentTypeError(f"{path}: expected a JSON object {{rater: vector}}")
    try:
        rater_vectors(embeddings)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{path}: {e}") from None
    out = FileValue(embeddings)
    out.source_path = path
    return out


def summary(result: BAEResult, seconds: float | None = None) -> str:
    """Plain text: BAE, then each pair's α (S_true) beside the model's cosine (S_model)."""
    lines = [f"images {result.n_images}   annotations {result.n_annotations}   raters {len(result.raters)}"
             + (f"   ({seconds:.2f} s)" if seconds is not None else ""),
             f"BAE {result.bae:.4f}   (1 = the model's rater similarities reproduce the pairwise alpha)"]
    for label, names in (("left out, no embeddings", result.only_labels),
                         ("left out, not in the labels", result.only_embeddings)):
        if names:
            lines.append(f"{label}: {', '.join(names)}")
    lines.append(f"\n{'pair':<32}{'alpha':>10}{'cosine':>10}")
    for i, a in enumerate(result.raters):
        for j in range(i + 1, len(result.raters)):
            t, m = result.true[i][j], result.model[i][j]
            lines.append(f"{a + ' - ' + result.raters[j]:<32}" + (f"{t:>10.3f}{m:>10.3f}" if t is not None
                                                                      else f"{'no shared image':>20}"))
    return "\n".join(lines)


def example(data: MeasureData) -> MeasureData:
    """The demo scenes with a seeded random 4-vector per rater (the registry-wide tests)."""
    import numpy as np

    rng = np.random.default_rng(0)
    return MeasureData(data.dataset, options={"embeddings": {r: rng.normal(size=4).tolist()
                                                             for r in data.dataset.raters}})


MEASURE = Measure(
    name="bae", help="behaviour alignment (BAE): a model's per-rater representations against the pairwise alpha",
    config=BAEConfig, steps=steps, result=BAEResult, method="kalos_bae", summary=summary,
    tasks=("bbox", "segm", "keypoints"),
    cli_options=(CliOption(("--embeddings",), dict(type=read_embeddings, required=True, metavar="EMB.json",
                                                   help="JSON {rater: vector} or {rater: [vector per sample]}")),),
    example=example)
