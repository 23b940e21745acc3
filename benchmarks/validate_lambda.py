"""The λ = 1 real-vs-synthetic section of ``docs/validation.md`` (used by ``validate.py``).

One synthetic rater simulated from LVIS rater r1 at λ = 1 must agree with r1 as much as the real
r2 does (paper Sec. 9.4): the shipped profiles on all 200 images (in sample), and a profile fitted
on the first 100 image ids checked on the other 100 (held out). 5 seeds, IoU 0.5, Greedy, ψsoft.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kalos_core import load_coco
from kalos_core.noise import load_profile
from kalos_core.noise.fit import fit_noise_profile
from kalos_core.noise.lambda_check import lambda_one_check, subset_coco

DATA = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
        / "lvis_v1_val_double_annotations_subset200.json").resolve()
TASKS = {"bbox": "boxes", "segm": "polygons"}


def lambda_checks(data: Path = DATA) -> dict:
    """``{(task, "all" | "held-out"): LambdaCheck}``; empty when the LVIS file is absent."""
    if not data.exists():
        return {}
    coco = json.loads(data.read_text())
    ids = sorted(im["id"] for im in coco["images"])
    out = {}
    for task in TASKS:
        out[(task, "all")] = lambda_one_check(coco, load_profile(task=task), task=task, seeds=range(5))
        fitted = fit_noise_profile(load_coco(subset_coco(coco, ids[:100]), task)).profile
        out[(task, "held-out")] = lambda_one_check(coco, fitted, task=task, seeds=range(5), image_ids=ids[100:])
    return out


def plot(checks: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    bins = np.linspace(-1, 1, 21)
    for ax, task in zip(axes, TASKS):
        c = checks[(task, "all")]
        ax.hist(c.real_per_image, bins, density=True, alpha=0.55, label="real α(r1, r2)")
        ax.hist(c.synthetic_per_image, bins, density=True, histtype="step", lw=2,
                label="synthetic α(r1, sim), 5 seeds")
        ax.set_title(f"{TASKS[task]}: per-image α, KS {c.per_image_ks:.3f}")
        ax.set_xlabel("per-image α")
    axes[0].set_ylabel("density")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def section(checks: dict) -> str:
    if not checks:
        return "## λ = 1 against real raters\n\nSkipped: the LVIS double-annotation file is not present.\n"
    rows = ["| data | images | real α(r1, r2) mean / global | synthetic α(r1, sim) mean / global | Δ mean / Δ global "
            "| per-image α KS |", "|---|---|---|---|---|---|"]
    for (task, split), c in checks.items():
        what = "shipped profile, all images" if split == "all" else "fit on first 100 ids, check on other 100"
        rows.append(f"| {TASKS[task]}, {what} | {c.n_images} | {c.real_mean:.4f} / {c.real_global:.4f} | "
                    f"{c.synthetic_mean:.4f} / {c.synthetic_global:.4f} | {c.synthetic_mean - c.real_mean:+.4f} / "
                    f"{c.synthetic_global - c.real_global:+.4f} | {c.per_image_ks:.3f} |")
    return f"""## λ = 1 against real raters (LVIS)

The generator's magnitude is anchored on real data: a profile fitted on rater pairs describes the
disagreement of a pair, so at λ = 1 one synthetic rater simulated from LVIS rater r1 must agree with r1
as much as the real r2 does (paper Sec. 9.4; `kalos_core.noise.lambda_check`, 5 seeds, IoU 0.5, Greedy,
ψsoft; the requirement is ±0.03 on mean and global α, `tests/core/test_noise_realdata.py`).

{chr(10).join(rows)}

![per-image alpha, real vs synthetic](img/validation/lambda_one_real_vs_synthetic.png)
"""
