"""compute_agreement on FiftyOne 3D detections (location / dimensions / rotation): read as
cuboids and compared by 3D IoU, with alpha checked against a hand-computed value."""

import math
import uuid

import numpy as np
import pytest

URI = "@kalos/agreement/compute_agreement"


def _det(fo, label, location, dimensions, rotation):
    return fo.Detection(label=label, location=[float(v) for v in location],
                        dimensions=[float(v) for v in dimensions], rotation=[float(v) for v in rotation])


def scenes(fo, ext):
    """Two raters on three scenes (samples pointing at placeholder files that need not exist):

    1. car: b's copy moved a quarter of its length along its own x -> IoU 0.75 / 1.25 = 0.6;
       pedestrian: b's turned a quarter turn about z (square footprint) -> IoU 1: alpha 1;
    2. car: b's copy moved half its length -> IoU 1/3 < 0.5: units [car, -], [-, car]: alpha -0.5;
    3. a truck that b (assigned, empty field) did not draw: one unit [truck, -]: alpha 0.
    """
    yaw = 0.3
    car, step = (12.345678901234567, -3.0000000000000004, 0.85), np.array([math.cos(yaw), math.sin(yaw), 0.0])
    dims, rot = (4.5, 1.9, 1.6), (0.0, 0.0, yaw)
    ped, ped_dims = (2.2, 7.123456789, 0.9), (0.6, 0.6, 1.8)
    a = [[_det(fo, "car", car, dims, rot), _det(fo, "pedestrian", ped, ped_dims, (0.0, 0.0, -1.2))],
         [_det(fo, "car", car, dims, rot)],
         [_det(fo, "truck", (30.0, 1.0, 1.5), (8.0, 2.5, 3.0), (0.0, 0.0, 1.0))]]
    b = [[_det(fo, "car", car + 4.5 / 4 * step, dims, rot),
          _det(fo, "pedestrian", ped, ped_dims, (0.0, 0.0, -1.2 + math.pi / 2))],
         [_det(fo, "car", car + 4.5 / 2 * step, dims, rot)],
         []]
    ds = fo.Dataset(f"kalos-cuboids-{uuid.uuid4().hex[:8]}")
    samples = []
    for k in range(3):
        s = fo.Sample(filepath=f"/nonexistent/scene{k}.{ext}", scene=k, rater_list=["a", "b"])
        s["raters_a"], s["raters_b"] = fo.Detections(detections=a[k]), fo.Detections(detections=b[k])
        samples.append(s)
    ds.add_samples(samples)
    del samples
    return ds


@pytest.mark.parametrize("ext,media_type", [("fo3d", "3d"), ("pcd", "point-cloud")])
def test_3d_detections_are_compared_as_cuboids(fo_isolated, ext, media_type):
    import fiftyone.operators as foo
    fo = fo_isolated
    ds = scenes(fo, ext)
    assert ds.media_type == media_type
    op = foo.get_operator(URI)
    res = op(ds, rater_fields=["raters_a", "raters_b"], run_key="kalos", bootstrap=0)
    assert res.config["kind"] == "cuboids" and res.config["distance"] == "iou3d"
    assert ds.values("kalos_alpha") == [1.0, pytest.approx(-0.5), pytest.approx(0.0)]
    assert res.mean_alpha == pytest.approx((1.0 - 0.5 + 0.0) / 3)
    # global: units [car car] [ped ped] [car -] [- car] [truck -]; n = 10 values (car 4, ped 2,
    # NO_OBJECT 3, truck 1); sum o_cc = 2 + 2; alpha = (9 * 4 - (12 + 2 + 6)) / (90 - 20) = 16/70
    assert res.global_alpha == pytest.approx(16 / 70)
    assert ds.values("raters_b.detections.kalos_status")[1] == ["unmatched"]
    looser = op(ds, rater_fields=["raters_a", "raters_b"], run_key="loose", threshold=0.3, bootstrap=0)
    assert ds.values("loose_alpha")[:2] == [1.0, 1.0] and looser.config["threshold"] == 0.3


def test_a_2d_detection_among_3d_ones_is_named(fo_isolated):
    import fiftyone.operators as foo
    fo = fo_isolated
    ds = scenes(fo, "fo3d")
    sample = ds.first()
    sample["raters_b"].detections.append(fo.Detection(label="car", bounding_box=[0.1, 0.1, 0.2, 0.2]))
    sample.save()
    with pytest.raises(Exception, match="no location / dimensions / rotation"):
        foo.get_operator(URI)(ds, rater_fields=["raters_a", "raters_b"], run_key="kalos", bootstrap=0)
    assert not ds.has_field("kalos_alpha")


def test_calibration_operator_reads_cuboids(fo_isolated):
    import fiftyone.operators as foo
    ds = scenes(fo_isolated, "fo3d")
    res = foo.get_operator("@kalos/agreement/calibrate")(ds, rater_fields=["raters_a", "raters_b"], bootstrap=0,
                                                          stratify=True)
    assert res.kind == "cuboids" and set(res.distances) == {"iou3d", "centroid_box"}
