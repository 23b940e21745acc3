"""The pairs behind each Do / De histogram bin (kalos_core.calibration.drill): every stored pair
is the query and its nearest partner, at a distance inside its bin, and each bin lists
min(its count, cap) pairs, an even spread of a fuller bin; boxes take the element-wise path, polygons the per-query one."""

import numpy as np
import pytest

from kalos_core import load_coco
from kalos_core.calibration import CalibrationConfig, calibrate
from kalos_core.calibration.drill import bin_of, bin_pairs
from kalos_core.demo_data import build_demo
from kalos_core.geometry import get_distance


@pytest.fixture(scope="module")
def demo_path(tmp_path_factory):
    return build_demo(tmp_path_factory.mktemp("drilldemo"), n_images=6, seed=1, with_images=False)


def test_bin_of_counts_as_numpy_histogram():
    edges = np.linspace(-0.1, 1.0, 12)
    values = np.array([-0.2, -0.1, 0.0, 0.15, 0.5, 0.999, 1.0, 1.1])
    k = bin_of(values, edges)
    assert np.bincount(k[k >= 0], minlength=11).tolist() == np.histogram(values, edges)[0].tolist()
    assert k[0] == -1 and k[-1] == -1 and k[-2] == 10


@pytest.mark.parametrize("task,distance", [("bbox", "giou"), ("segm", "iou")])
def test_each_stored_pair_lies_in_its_bin(demo_path, task, distance):
    data = load_coco(demo_path, task)
    res = calibrate(data, CalibrationConfig(distances=(distance,), bootstrap=0, histogram_bins=10, alpha_preview=False))
    cap = 7
    drill = bin_pairs(res.observations, {distance: res.distances[distance].histogram}, cap=cap)
    every = bin_pairs(res.observations, {distance: res.distances[distance].histogram})   # the default cap: all
    queries = {name: {k: [[d["labels"][q] for q in f[::2]] for f in v] for k, v in d["distances"][distance].items()}
               for name, d in (("capped", drill), ("all", every))}
    hist = res.distances[distance].histogram
    spec = get_distance(data.kind, distance)
    by_id = {str(a.id): (im, a) for im in data.images for a in im.annotations}
    for key in ("do", "de"):
        for b, flat in enumerate(drill["distances"][distance][key]):
            assert len(flat) // 2 == min(hist[key][b], cap)
            # the default keeps every pair up to the distance's cap: 5,000 (boxes), 300 (exact polygon IoU)
            assert every["caps"][distance] == (5000 if task == "bbox" else 300)
            assert len(every["distances"][distance][key][b]) // 2 == min(hist[key][b], every["caps"][distance])
            kept, full = queries["capped"][key][b], queries["all"][key][b]
            if hist[key][b] > cap:   # a fuller bin keeps an even spread from first to last, not its first pairs
                assert kept[0] == full[0] and kept[-1] == full[-1] and kept != full[:cap]
            for q, p in zip(flat[::2], flat[1::2]):
                im, a = by_id[drill["labels"][q]]
                assert drill["samples"][drill["label_sample"][q]] == str(im.id)
                if p < 0:
                    d = 1.0
                else:
                    im2, a2 = by_id[drill["labels"][p]]
                    assert (im2.id == im.id and a2.rater != a.rater) if key == "do" else im2.id != im.id
                    s = spec.similarity(spec.prepare(im, [a]), spec.prepare(im2, [a2]))
                    d = 1.0 - float(np.asarray(s)[0, 0])
                assert hist["edges"][b] - 1e-9 <= d <= hist["edges"][b + 1] + 1e-9, (key, b, d)
