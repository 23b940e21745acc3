"""Semantic masks: α over pixels (Krippendorff's published data laid out as pixels), Dice and
Jaccard by hand, the boundary measures of a square offset by k pixels and against medpy, STAPLE
against SimpleITK's STAPLEImageFilter and MultiLabelSTAPLEImageFilter."""

import numpy as np
import pytest

from kalos_core.masks import MaskConfig, compute_masks, masks_dataset, staple
from kalos_core.masks.pixels import patterns
from kalos_core.masks.surface import pair_measures
from kalos_core.reliability import alpha

VOID = 255
n = np.nan
#: Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers x 12 units, nominal, α = 0.743
KRIPPENDORFF = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
    [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
])


def as_maps(matrix, shape):
    """Each rater's row as a uint8 class map of ``shape``, NaN as the void value."""
    return [np.where(np.isnan(row), VOID, row).astype(np.uint8).reshape(shape) for row in matrix]


def run(masks, **config):
    return compute_masks(masks_dataset(masks), masks, MaskConfig(ignore=VOID, **config))


def test_krippendorffs_data_as_the_pixels_of_one_image_give_his_alpha():
    maps = as_maps(KRIPPENDORFF, (3, 4))
    result = run({f"r{k}": {"img": m} for k, m in enumerate(maps)}, boundary=False, consensus="none")
    assert result.alpha == pytest.approx(alpha(KRIPPENDORFF), abs=1e-12)
    assert result.alpha == pytest.approx(0.743, abs=5e-4)
    assert result.per_image[0]["alpha"] == result.alpha
    assert result.per_image[0]["pairable_pixels"] == 11          # the 12th unit holds one value
    for c in range(1, 6):                                         # one vs rest = α of the binarised matrix
        binary = np.where(np.isnan(KRIPPENDORFF), n, KRIPPENDORFF == c)
        assert result.alpha_per_class[str(c)] == pytest.approx(alpha(binary), abs=1e-12), c


def test_alpha_over_images_is_the_alpha_of_all_their_pixels_and_an_absent_rater_is_missing():
    left, right = KRIPPENDORFF[:, :6], KRIPPENDORFF[:, 6:].copy()
    masks = {f"r{k}": {"a": m} for k, m in enumerate(as_maps(left, (2, 3)))}
    for k, m in enumerate(as_maps(right, (2, 3))):
        if k != 0:                                    # rater 0 drew no mask of image b
            masks[f"r{k}"]["b"] = m
    right[0] = n
    result = run(masks, boundary=False)
    whole = np.concatenate([left, right], axis=1)
    assert result.alpha == pytest.approx(alpha(whole), abs=1e-12)
    by_image = {row["image"]: row for row in result.per_image}
    assert by_image["b"]["raters"] == ["r1", "r2", "r3"]
    assert by_image["b"]["alpha"] == pytest.approx(alpha(right), abs=1e-12)


def test_identical_maps_agree_and_a_class_nobody_drew_has_no_alpha():
    m = np.zeros((8, 8), np.uint8)
    m[2:5, 2:5] = 1
    result = run({"a": {"x": m}, "b": {"x": m.copy()}}, classes=("bg", "cell", "nucleus"))
    assert result.alpha == 1.0 and result.alpha_per_class == {"0": 1.0, "1": 1.0, "2": None}
    assert result.pairs["a|b"]["1"]["dice"] == 1.0 and "2" not in result.pairs["a|b"]


def test_dice_and_jaccard_of_two_offset_squares_by_hand():
    a, b = np.zeros((10, 10), np.uint8), np.zeros((10, 10), np.uint8)
    a[0:4, 0:4] = 1          # 16 pixels
    b[0:4, 2:6] = 1          # 16 pixels, 8 shared
    pair = run({"a": {"x": a}, "b": {"x": b}}).pairs["a|b"]
    assert pair["1"]["dice"] == pytest.approx(0.5) and pair["1"]["jaccard"] == pytest.approx(8 / 24)
    assert pair["0"]["dice"] == pytest.approx(2 * 76 / 168)       # background: 84 each, 76 shared


def square(shift=0, size=64, empty=False):
    m = np.zeros((size, size), bool)
    if not empty:
        m[10:30, 10 + shift:30 + shift] = True
    return m


def test_a_square_offset_by_three_pixels_by_hand():
    """Of each square's 76 boundary pixels, 34 lie 3 pixels from the other's boundary (the far side
    and the middle 14 of the near side), the rest within 2."""
    a, b = square(), square(shift=3)
    at3 = pair_measures(a, b, tolerance=3)
    assert at3["boundary_f"] == 1.0 and at3["surface_dice"] == 1.0 and at3["hd95"] == pytest.approx(3.0)
    at2 = pair_measures(a, b, tolerance=2)
    assert at2["boundary_f"] == pytest.approx(42 / 76) and at2["surface_dice"] == pytest.approx(84 / 152)
    assert pair_measures(a, a, tolerance=0) == {"boundary_f": 1.0, "surface_dice": 1.0, "hd95": 0.0, "msd": 0.0}


def test_an_empty_side_scores_zero_and_has_no_distance_and_two_empty_sides_score_nothing():
    assert pair_measures(square(), square(empty=True), 2) == {"boundary_f": 0.0, "surface_dice": 0.0,
                                                              "hd95": None, "msd": None}
    assert set(pair_measures(square(empty=True), square(empty=True), 2).values()) == {None}


def blobs(seed, size=96):
    """A random smooth blob mask (thresholded, smoothed noise), several components."""
    from scipy import ndimage

    rng = np.random.default_rng(seed)
    return ndimage.gaussian_filter(rng.random((size, size)), 4) > 0.5


@pytest.mark.parametrize("seed", range(4))
def test_hd95_and_the_mean_surface_distance_are_medpys(seed):
    from medpy.metric.binary import assd, hd95

    a, b = blobs(seed), blobs(seed + 100)
    mine = pair_measures(a, b, tolerance=2)
    assert mine["hd95"] == pytest.approx(hd95(a, b), abs=1e-6)
    assert mine["msd"] == pytest.approx(assd(a, b), abs=1e-6)
    engine = run({"a": {"x": a.astype(np.uint8)}, "b": {"x": b.astype(np.uint8)}}).pairs["a|b"]["1"]
    assert engine["hd95"] == pytest.approx(hd95(a, b), abs=1e-6) and engine["msd"] == pytest.approx(mine["msd"])


def noisy_raters(seed=0, errors=(0.02, 0.05, 0.1, 0.15, 0.08), size=64):
    """Five raters' 3-class maps: a disc-in-square truth, each pixel relabelled at random at a rater's rate."""
    rng = np.random.default_rng(seed)
    truth = np.zeros((size, size), np.uint8)
    truth[12:52, 10:50] = 1
    yy, xx = np.mgrid[:size, :size]
    truth[(yy - 32) ** 2 + (xx - 30) ** 2 < 100] = 2
    maps = []
    for e in errors:
        m = truth.copy()
        flip = rng.random(m.shape) < e
        m[flip] = rng.integers(0, 3, int(flip.sum()))
        maps.append(m)
    return maps


def test_binary_staple_is_simpleitks_staple_image_filter():
    sitk = pytest.importorskip("SimpleITK")
    maps = [(m == 1).astype(np.uint8) for m in noisy_raters()]
    table, count, index = patterns(np.stack([m.ravel().astype(np.int64) for m in maps]), 2)
    fit = staple(table, count, 2, tolerance=1e-7)
    f = sitk.STAPLEImageFilter()
    f.SetForegroundValue(1.0)
    prob = sitk.GetArrayFromImage(f.Execute([sitk.GetImageFromArray(m) for m in maps])).ravel()
    assert fit.converged
    assert np.abs(fit.posterior[index, 1] - prob).max() < 1e-5
    np.testing.assert_allclose(fit.sensitivity()[:, 1], f.GetSensitivity(), atol=1e-6)
    np.testing.assert_allclose(fit.sensitivity()[:, 0], f.GetSpecificity(), atol=1e-6)


def test_the_probability_maps_are_simpleitks_staple_posterior_and_the_majority_share():
    sitk = pytest.importorskip("SimpleITK")
    maps = [(m == 1).astype(np.uint8) for m in noisy_raters(seed=2)]
    result = run({f"r{k}": {"img": m} for k, m in enumerate(maps)}, boundary=False, probabilities=True)
    f = sitk.STAPLEImageFilter()
    f.SetForegroundValue(1.0)
    w = sitk.GetArrayFromImage(f.Execute([sitk.GetImageFromArray(m) for m in maps]))
    theirs = np.rint(100 * np.maximum(w, 1 - w))
    assert np.abs(result.probability["img"].astype(int) - theirs).max() <= 1     # percent, rounded
    np.testing.assert_array_equal(result.consensus["img"], (w > 0.5).astype(np.uint8))
    a, b, c = (np.array([[0, 1, 1]], np.uint8), np.array([[0, 1, 2]], np.uint8), np.array([[0, 0, VOID]], np.uint8))
    vote = run({"a": {"x": a}, "b": {"x": b}, "c": {"x": c}}, consensus="majority", probabilities=True, boundary=False)
    np.testing.assert_array_equal(vote.probability["x"], [[100, 67, 50]])


def test_multiclass_staple_through_the_measure_is_simpleitks_multilabel_staple():
    sitk = pytest.importorskip("SimpleITK")
    maps = noisy_raters(seed=1)
    names = [f"r{k}" for k in range(len(maps))]
    result = run({r: {"img": m} for r, m in zip(names, maps)}, boundary=False)
    g = sitk.MultiLabelSTAPLEImageFilter()
    g.SetTerminationUpdateThreshold(1e-7)
    theirs = sitk.GetArrayFromImage(g.Execute([sitk.GetImageFromArray(m) for m in maps]))
    decided = theirs < 3                          # 3 = SimpleITK's "undecided"
    assert decided.mean() > 0.99
    np.testing.assert_array_equal(result.consensus["img"][decided], theirs[decided])
    staple_rows = result.per_image[0]["staple"]["raters"]
    for k, r in enumerate(names):
        confusion = np.array(g.GetConfusionMatrix(k)).reshape(4, 3)      # [rater says j, true c]
        for c in range(3):
            assert staple_rows[r][str(c)]["sensitivity"] == pytest.approx(confusion[c, c], abs=1e-5)


def test_majority_vote_by_hand():
    a = np.array([[0, 1, 2, 1]], np.uint8)
    b = np.array([[0, 1, 1, 2]], np.uint8)
    c = np.array([[1, 2, 2, VOID]], np.uint8)
    result = run({"a": {"x": a}, "b": {"x": b}, "c": {"x": c}}, consensus="majority", boundary=False)
    np.testing.assert_array_equal(result.consensus["x"], [[0, 1, 2, 1]])    # a 1-1 tie: the lower class


@pytest.mark.parametrize("consensus", ["staple", "majority"])
def test_a_pixel_nobody_labelled_keeps_the_void_value_in_the_consensus(consensus):
    a = np.array([[1, 1, VOID, 0]], np.uint8)
    b = np.array([[1, 0, VOID, 0]], np.uint8)
    result = run({"a": {"x": a}, "b": {"x": b}}, consensus=consensus, boundary=False)
    assert result.consensus["x"][0, 2] == VOID and result.consensus["x"][0, 0] == 1


def test_a_volume_is_measured_as_its_voxels_and_its_surfaces_are_medpys():
    """A 3D class map (a .npy volume): α over its voxels is α of the same values laid out in 2D;
    HD95 over 6-connected surfaces equals medpy's."""
    from medpy.metric.binary import hd95

    a = np.stack([blobs(s, 40) for s in range(6)]).astype(np.uint8)
    b = np.stack([blobs(s + 50, 40) for s in range(6)]).astype(np.uint8)
    volume = run({"a": {"v": a}, "b": {"v": b}})
    flat = run({"a": {"v": a.reshape(6 * 40, 40)}, "b": {"v": b.reshape(6 * 40, 40)}}, boundary=False)
    assert volume.alpha == pytest.approx(flat.alpha, abs=1e-12)
    assert volume.pairs["a|b"]["1"]["hd95"] == pytest.approx(hd95(a, b), abs=1e-6)
    assert volume.consensus["v"].shape == (6, 40, 40)
    slices = run({"a": {k: a[k] for k in range(6)}, "b": {k: b[k] for k in range(6)}}, boundary=False)
    assert volume.per_image[0]["alpha_per_slice"] == pytest.approx([row["alpha"] for row in slices.per_image])


def test_a_volumes_per_slice_dice_and_boundary_measures_are_those_of_its_slices_and_medpys_hd95():
    from medpy.metric.binary import hd95

    a = np.stack([blobs(s, 40) for s in range(4)]).astype(np.uint8)
    b = np.stack([blobs(s + 50, 40) for s in range(4)]).astype(np.uint8)
    b[2] = 0   # b has no class 1 on slice 2: Dice 0, no distance
    got = run({"a": {"v": a}, "b": {"v": b}}).per_image[0]["per_slice"]["a|b"]["1"]
    for z in range(4):
        alone = run({"a": {"s": a[z]}, "b": {"s": b[z]}}, consensus="none").pairs["a|b"]["1"]
        assert got["dice"][z] == pytest.approx(2 * (a[z] & b[z]).sum() / (a[z].sum() + b[z].sum()))
        assert {k: got[k][z] for k in ("dice", "boundary_f", "surface_dice", "hd95", "msd")} == pytest.approx(
            {k: alone[k] for k in ("dice", "boundary_f", "surface_dice", "hd95", "msd")})
        if z != 2:
            assert got["hd95"][z] == pytest.approx(hd95(a[z], b[z]), abs=1e-6)
    assert got["dice"][2] == 0.0 and got["hd95"][2] is None and got["boundary_f"][2] == 0.0
