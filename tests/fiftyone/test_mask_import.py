"""Semantic masks imported into FiftyOne, one Segmentation field per rater, from files as the tools
write them (8-bit PNG folders, CVAT "Segmentation mask" exports, a Label Studio brush export):
the class maps and classes land in the fields and ``mask_targets``, the masks are written outside
the exports, and compute_mask_agreement on the fields gives the α of ``python -m kalos_core masks``
on the same exports. Refusals leave the dataset and the disk untouched."""

import json

import numpy as np
import pytest

from kalos_core.cli import main as kalos_main
from tests.fiftyone.helpers import cvat_export, ls_export, write_png
from tests.fiftyone.helpers import truth_mask as truth
from tests.fiftyone.helpers import (
    form_errors,
    new_name,
    refused,
    resolved_form,
    run_operator,
    snapshot,
)

RATERS = ("ann", "bob", "cy")


@pytest.fixture
def folders(tmp_path):
    """Three raters' PNG folders, two images; bob has no mask of img2."""
    for k, rater in enumerate(RATERS):
        write_png(tmp_path / "exports" / rater / "img1.png", truth(shift=k))
        if rater != "bob":
            write_png(tmp_path / "exports" / rater / "img2.png", truth(shift=2 * k))
    return [tmp_path / "exports" / r for r in RATERS]


def cli_alpha(paths, tmp_path, *options):
    """``python -m kalos_core masks PATHS``: its result JSON."""
    out = tmp_path / "cli.json"
    assert kalos_main(["masks", *map(str, paths), *options, "--no-boundary", "--output", str(out)]) == 0
    return json.loads(out.read_text())


def plugin_alpha(ds, fields, *classes):
    run_operator("compute_mask_agreement", ds, mask_fields=fields, run_key="m", boundary=False,
                 **({"classes": list(classes)} if classes else {}))
    return ds.load_run_results("m")


def files(root):
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_png_folders_give_a_new_dataset_whose_mask_alpha_is_the_command_lines(imports, folders, tmp_path):
    before = files(tmp_path / "exports")
    ds = imports.import_masks(new_name(), folders, mask_dir=tmp_path / "masks", classes="bg,road,car")
    assert files(tmp_path / "exports") == before                      # nothing written into the exports
    fields = [f"masks_{r}" for r in RATERS]
    assert ds.info["kalos_import"]["mask_fields"] == dict(zip(fields, RATERS)) and len(ds) == 2
    assert all(ds.mask_targets[f] == {0: "bg", 1: "road", 2: "car"} for f in fields)
    img2 = ds.match({"filepath": {"$regex": "img2"}}).first()
    assert img2["masks_bob"] is None                                   # not drawn: missing, not background
    assert np.array_equal(img2["masks_cy"].get_mask(), truth(shift=4))
    assert img2["masks_cy"].mask_path.startswith(str(tmp_path / "masks"))
    from PIL import Image
    assert Image.open(img2.filepath).size == (48, 40)                 # the placeholder has the mask's size
    stored = plugin_alpha(ds, fields, "bg", "road", "car")
    cli = cli_alpha(folders, tmp_path, "--classes", "bg,road,car")
    assert stored.alpha == pytest.approx(cli["alpha"], abs=1e-12)
    assert {str(k): v for k, v in stored.alpha_per_class.items()} == pytest.approx(cli["alpha_per_class"])


def test_cvat_exports_are_matched_to_existing_samples_by_stem(imports, fo_isolated, tmp_path):
    fo = fo_isolated
    dirs = [cvat_export(tmp_path, r, {"img1": truth(shift=k), "img2": truth(shift=2 * k)})
            for k, r in enumerate(RATERS[:2])]
    ds = fo.Dataset(new_name())
    ds.add_samples([fo.Sample(filepath=f"/images/{n}.jpg", keep=n) for n in ("img1", "img2", "img3")])
    imports.import_masks(ds, dirs, label_field="seg", mask_dir=tmp_path / "masks")
    assert ds.mask_targets["seg_ann"] == {0: "background", 1: "road", 2: "car"}     # from labelmap.txt
    one = ds.match({"filepath": "/images/img2.jpg"}).first()
    assert one["keep"] == "img2" and np.array_equal(one["seg_bob"].get_mask(), truth(shift=2))   # colours -> indices
    assert ds.match({"filepath": "/images/img3.jpg"}).first()["seg_ann"] is None
    cli = cli_alpha(dirs, tmp_path)
    assert plugin_alpha(ds, ["seg_ann", "seg_bob"]).alpha == pytest.approx(cli["alpha"], abs=1e-12)


def test_a_label_studio_brush_export_gives_one_field_per_annotator(imports, tmp_path):
    maps = {"img1": {k + 1: truth(shift=k) for k in range(3)}, "img2": {1: truth(), 3: truth(shift=4)}}
    path = ls_export(tmp_path, maps)
    ds = imports.import_masks(new_name(), [path], mask_dir=tmp_path / "masks", rater_names={"1": "ann"})   # user 1
    fields = ["masks_ann", "masks_user_2", "masks_user_3"]
    assert sorted(ds.info["kalos_import"]["mask_fields"]) == fields
    assert ds.mask_targets["masks_ann"] == {0: "background", 1: "car", 2: "road"}
    img2 = ds.match({"filepath": {"$regex": "img2"}}).first()
    assert img2["masks_user_2"] is None and np.array_equal(img2["masks_user_3"].get_mask(), truth(shift=4))
    assert plugin_alpha(ds, fields).alpha == pytest.approx(cli_alpha([path], tmp_path)["alpha"], abs=1e-12)


@pytest.mark.parametrize("break_it, words", [
    (lambda t, d: write_png(d[1] / "img1.png", np.zeros((40, 50))), ["img1", "differ in size", "bob 40x50"]),
    (lambda t, d: write_png(d[2] / "img2.png", np.full((40, 48), 7)), ["img2", "'cy'", "[7]"]),
    (lambda t, d: write_png(d[0] / "img9.png", truth()), ["match no sample", "img9", "import those images first"]),
    (lambda t, d: (d[0] / "img1.png").write_bytes(b""), ["ann/img1.png", "empty file"]),
    (lambda t, d: t["ds"].add_sample_field("masks_bob", t["fo"].StringField), ["'masks_bob' exists", "never writes"]),
    (lambda t, d: t.update(mask_dir=d[0] / "out"), ["inside the export folder", "outside the exports"]),
    (lambda t, d: write_png(t["mask_dir"] / "masks_cy" / "img2.png", truth()), ["exists already", "img2.png"]),
    (lambda t, d: t["ds"].add_sample(t["fo"].Sample(filepath="/other/img1.png")), ["two samples", "'img1'"]),
])
def test_refusals_name_the_problem_and_leave_the_dataset_and_disk_untouched(imports, fo_isolated, folders, tmp_path,
                                                                            break_it, words):
    fo = fo_isolated
    ds = fo.Dataset(new_name())
    ds.add_samples([fo.Sample(filepath=f"/images/{n}.jpg") for n in ("img1", "img2")])
    target = {"ds": ds, "fo": fo, "mask_dir": tmp_path / "masks"}
    break_it(target, folders)
    before, on_disk = snapshot(ds), files(tmp_path)
    with pytest.raises(imports.ImportRefused) as e:
        imports.import_masks(ds, folders, mask_dir=target["mask_dir"], classes=["bg", "road", "car"])
    assert all(w in str(e.value) for w in words) and "\n" not in str(e.value), str(e.value)
    assert snapshot(ds) == before and files(tmp_path) == on_disk


def test_the_command_line_imports_masks_and_refuses_in_one_line(imports, fo_isolated, folders, tmp_path,
                                                                capsys):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports.cli import main

    name = new_name()
    from PIL import Image

    Image.new("RGB", (48, 40)).save(tmp_path / "img1.jpg")     # img2 has no image: a placeholder
    argv = [name, "--masks", *map(str, folders), "--classes", "bg,road,car"]
    assert main([*argv, "--mask-dir", str(tmp_path / "m"), "--images", str(tmp_path)]) == 0
    assert "Segmentation fields ['masks_ann', 'masks_bob', 'masks_cy']" in capsys.readouterr().out
    img1, img2 = sorted(fo_isolated.load_dataset(name).values("filepath"), key=lambda f: "img2" in f)
    assert img1 == str(tmp_path / "img1.jpg") and img2.endswith("img2.png") and "kalos_placeholders" in img2
    assert main([*argv, "--mask-dir", str(tmp_path / "m2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'masks_ann' exists" in err[0], err


def test_the_app_import_form_offers_the_mask_formats_into_the_open_dataset(fo_isolated, folders, tmp_path):
    fo = fo_isolated
    ds = fo.Dataset(new_name())
    ds.add_samples([fo.Sample(filepath=f"/images/{n}.jpg") for n in ("img1", "img2")])
    rows = [{"rater": r.upper(), "path": str(f), "format": "KalosMaskFolders"} for r, f in zip(RATERS, folders)]
    mixed = [rows[0], {"rater": "x", "path": str(folders[1]), "format": "COCODetectionDataset"}]
    assert "mask format" in form_errors(resolved_form("import_rater_exports", ds, exports=mixed))["exports"]
    write_png(folders[0] / "img9.png", truth())
    refused("import_rater_exports", ds, "match no sample", exports=rows, target="current", mask_dir=str(tmp_path / "m"))
    assert not (tmp_path / "m").exists()
    (folders[0] / "img9.png").unlink()
    run_operator("import_rater_exports", ds, exports=rows, target="current", mask_dir=str(tmp_path / "m"),
                 classes="bg,road,car", label_field="seg")
    ds.reload()
    assert sorted(ds.info["kalos_import"]["mask_fields"].values()) == ["ANN", "BOB", "CY"]
    assert ds.mask_targets["seg_ANN"] == {0: "bg", 1: "road", 2: "car"}
    one = ds.match({"filepath": "/images/img1.jpg"}).first()
    assert np.array_equal(one["seg_CY"].get_mask(), truth(shift=2))
