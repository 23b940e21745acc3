"""The import command line from a clone (``python -m fiftyone_layer.imports``, and the older
``python operators/rater_import.py``): an import prints one line; a refusal one line on stderr and
exit 2, never a traceback; and a refusal leaves the user's dataset exactly as it was."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.fiftyone.helpers import import_tools

ROOT = Path(__file__).resolve().parents[2]
tools = import_tools()


def name():
    return f"kalos-cli-{uuid.uuid4().hex[:8]}"


def command(*args):
    """Run a command in the clone with the tests' database (conftest's environment)."""
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=dict(os.environ), capture_output=True, text=True,
                          timeout=300)


def test_python_m_imports_names_the_raters_and_refuses_in_one_line(fo_isolated, tmp_path):
    path = tmp_path / "project-1-export.json"
    path.write_text(json.dumps(tools.label_studio(), indent=2))
    target = name()
    done = command("-m", "fiftyone_layer.imports", target, "--label-studio", str(path), "--rater-names", "1=alice,2=bob")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == [f"{target}: 2 samples; rater fields ['raters_alice', 'raters_bob']"]
    assert fo_isolated.load_dataset(target).count("raters_alice.detections") == 2
    again = command("-m", "fiftyone_layer.imports", name(), "--label-studio", str(path), "--rater-names", "3=carol")
    assert again.returncode == 2 and "Traceback" not in again.stderr
    assert again.stderr.strip().splitlines() == ["error: rater_names names '3', which no export holds (raters read: "
                                                 "user 1, user 2); give the Label Studio user id or email, or the "
                                                 "CVAT rater, as read"]


def test_operators_rater_import_still_runs_the_command_line(fo_isolated, tmp_path):
    paths = []
    for job, rater in ((7, "alice"), (8, "bob")):
        paths.append(tmp_path / f"job_{job}.xml")
        paths[-1].write_text(tools.cvat_job(rater, job))
    target = name()
    done = command("operators/rater_import.py", target, "--cvat", *map(str, paths))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{target}: 2 samples; rater fields ['raters_alice', 'raters_bob']"


@pytest.mark.parametrize("layout", ["coco", "exports"])
def test_a_label_field_of_another_type_is_refused_before_anything_is_written(fo_isolated, tmp_path, layout):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import imports

    ds = fo_isolated.Dataset(name())
    ds.add_sample(fo_isolated.Sample(filepath=str(tmp_path / "mine.jpg"),
                                     raters_bob=fo_isolated.Classification(label="mine")))
    before = {k: str(v) for k, v in ds.get_field_schema().items()}
    with pytest.raises(imports.ImportRefused, match="field 'raters_bob' of dataset .* holds Classification, not "
                                                    "the Detections the import writes"):
        if layout == "coco":
            imports.import_multirater_coco(ds, tools.multirater_coco(), placeholders=False)
        else:
            exports = []
            for rater in ("alice", "bob"):
                (tmp_path / f"{rater}.json").write_text(json.dumps(tools.coco_export(rater)))
                exports.append((rater, str(tmp_path / f"{rater}.json"), "COCODetectionDataset"))
            imports.import_rater_exports(ds, exports, placeholders=False)
    ds.reload()
    assert {k: str(v) for k, v in ds.get_field_schema().items()} == before and len(ds) == 1


def test_the_import_command_runs_the_agreement_next(fo_isolated, tmp_path):
    """--agreement: the plugin's compute_agreement on the imported fields, stored as a run. Hand check:
    on a.jpg alice and bob draw one cat box each, IoU 0.97 -> alpha 1; on b.jpg a dog against a cat
    in the same place -> alpha 0."""
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(tools.multirater_coco(), indent=2))
    target = name()
    done = command("-m", "fiftyone_layer.imports", target, "--coco", str(path), "--agreement")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == f"{target}: 2 samples; rater fields ['raters_alice', 'raters_bob']"
    assert lines[1].startswith("agreement run 'kalos' on 2 rater fields: mean alpha ")
    ds = fo_isolated.load_dataset(target)
    assert "kalos" in ds.list_runs()
    assert [ds.match({"coco_id": i}).first()["kalos_alpha"] for i in (1, 2)] == [1.0, 0.0]
