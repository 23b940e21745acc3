"""The attribute-agreement measure, declared once (:mod:`kalos_core.measure`).

``python -m kalos_core attributes FILE.json --task bbox ...`` reads each annotation's
``"attributes": {name: value}`` (as CVAT's COCO export writes them), matches the raters' labels
into units as ``agreement`` does, and writes ``AttributeResult.to_dict()``: per attribute its
α, metric, counts and the units where the raters disagree, and the same per class.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..io.coco import TASK_GEOMETRY_KINDS
from ..io.jsonfile import load_json_file
from ..io.records import check_measurable
from ..measure import CliOption, Measure, MeasureData
from ..measure_cli import load_or_report
from .engine import AttributeConfig, AttributeResult, attribute_steps


def steps(data: MeasureData, config: AttributeConfig):
    """Attribute α of ``data.dataset``: ``data.options["attributes"]`` (label id -> ``{name: value}``)
    and, where given, ``data.options["units"]`` (label id -> unit id of a stored agreement run)."""
    return attribute_steps(data.dataset, data.options.get("attributes") or {}, config, data.options.get("units"))


def read_attributes(path: Path) -> dict:
    """Annotation id -> its ``"attributes"`` object, for the annotations of the COCO file that have one.
    A ValueError names an annotation whose ``attributes`` is not an object."""
    out = {}
    for ann in load_json_file(path).get("annotations") or []:
        attrs = ann.get("attributes") if isinstance(ann, dict) else None
        if attrs is None:
            continue
        if not isinstance(attrs, dict):
            raise ValueError(f"{path}: annotation {ann.get('id')!r}: 'attributes' must be an object "
                             f"{{name: value}}, got {attrs!r}"[:200])
        if attrs:
            out[ann.get("id")] = attrs
    return out


def read(args: argparse.Namespace) -> MeasureData | None:
    """The labels file and its annotations' attributes (None after an error line: exit 2)."""
    dataset = load_or_report(args.file, args.task, skip_invalid=args.skip_invalid)
    if dataset is None:
        return None
    check_measurable(dataset)                 # nothing to measure: said before the attributes are looked for
    attributes = read_attributes(args.file)   # parsed once more: the labels' readers stay as fast as they are
    if not attributes:
        print(f"error: {args.file}: no annotation carries \"attributes\": nothing to compare (each annotation "
              "needs \"attributes\": {name: value}, as CVAT's COCO export writes)", file=sys.stderr)
        return None
    return MeasureData(dataset, options={"attributes": attributes})


def summary(result: AttributeResult, seconds: float | None = None) -> str:
    """Plain text: one line per attribute (α and its metric, pairable units and values, disagreeing units)."""
    lines = [f"images {result.n_images}   annotations {result.n_annotations}   units {result.n_units} "
             f"({result.units_from})" + (f"   ({seconds:.2f} s)" if seconds is not None else "")]
    for name, a in result.per_attribute.items():
        alpha = f"alpha {a['alpha']:.4f}" if a["alpha"] is not None else f"alpha — ({a['reason']})"
        lines.append(f"{name}: {alpha}   {a['metric']}   units {a['n_units']}   values {a['n_values']}   "
                     f"disagreeing units {a['n_disagreeing']}")
    return "\n".join(lines)


def example(data: MeasureData) -> MeasureData:
    """The demo scenes with seeded attributes on every label (the registry-wide tests)."""
    import numpy as np

    rng = np.random.default_rng(0)
    attributes = {}
    for im in data.dataset.images:
        for a in im.annotations:
            attributes[a.id] = {"occluded": bool(rng.random() < 0.3), "pose": int(rng.integers(1, 4)),
                                "colour": str(rng.choice(["red", "blue", "grey"])),
                                "plate": None if rng.random() < 0.2 else f"AB{int(rng.integers(10, 13))}"}
    return MeasureData(data.dataset, options={"attributes": attributes})


def _option(*flags, **kwargs) -> CliOption:
    return CliOption(flags, kwargs)


MEASURE = Measure(
    name="attributes",
    help="attribute agreement: Krippendorff's alpha of the labels' attributes over the matched units",
    config=AttributeConfig, steps=steps, result=AttributeResult, method="kalos_attributes", conventions=("attribute_alpha",),
    tasks=tuple(TASK_GEOMETRY_KINDS), summary=summary, read=read, example=example,
    example_params={"metrics": ("pose:ordinal", "plate:levenshtein")},
    cli_options=(
        _option("file", type=Path),
        _option("--task", choices=list(TASK_GEOMETRY_KINDS), default="bbox"),
        _option("--skip-invalid", action="store_true", help="drop invalid annotations, count them, go on"),
    ))
