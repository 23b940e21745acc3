"""Property tests of the imports (Hypothesis, seeded by its database-free derandomised mode):

- a random multi-rater box set written in every tool's format (per-rater COCO, CVAT jobs, a CVAT
  project export with CVAT's renaming, Label Studio JSON, YOLOv5 labels without images) imports to
  the very labels of the multi-rater COCO import, per image and rater: same classes, same boxes (to
  1e-12 of the image; YOLO's 6 decimals: 1e-6), the same raters assigned; equal labels give equal α;
- the same files spoiled at random (cut short, a key dropped, a value of another type, another
  encoding) are imported or refused with :class:`ImportRefused` / the engine's ``InvalidInputError``
  naming the file, never another exception, and a refused import leaves no dataset behind.
"""

import json
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.fiftyone.helpers import import_tools

tools = import_tools()

FORMATS = ("COCO per rater", "CVAT jobs", "CVAT project", "Label Studio")
#: YOLOv5 without its images: relative coordinates written to 6 decimals, so boxes agree to 1e-6
IMPORTED = (*FORMATS, "YOLOv5 per rater")
SETTINGS = settings(max_examples=int(__import__("os").environ.get("KALOS_EXAMPLES", 30)), deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@st.composite
def box_sets(draw):
    """{rater: [(file name, class index, x, y, w, h)]} in whole pixels of a 640 x 480 image (CVAT's
    importer reads whole-pixel corners), two or three raters, every rater on both images."""
    raters = draw(st.sampled_from([("r1", "r2"), ("r1", "r2", "r3")]))
    out = {}
    for r in raters:
        boxes = []
        for f in ("a.jpg", "b.jpg"):
            for _ in range(draw(st.integers(0, 3))):
                x, y = draw(st.integers(0, 600)), draw(st.integers(0, 440))
                boxes.append((f, draw(st.integers(0, 1)), float(x), float(y),
                              float(draw(st.integers(1, 640 - x))), float(draw(st.integers(1, 480 - y)))))
        out[r] = boxes
    return out


def write_format(fmt, boxes, folder: Path) -> list:
    """The exports of ``boxes`` in ``fmt``, as ``import_rater_exports`` takes them."""
    folder.mkdir(parents=True)
    tools.BOXES = boxes   # the table module's writers draw their boxes from BOXES
    if fmt == "COCO per rater":
        out = []
        for r in boxes:
            (folder / f"{r}.json").write_text(json.dumps(tools.coco_export(r), indent=2))
            out.append((r, str(folder / f"{r}.json"), "COCODetectionDataset"))
        return out
    if fmt == "CVAT jobs":
        out = []
        for j, r in enumerate(boxes):
            (folder / f"job_{j}.xml").write_text(tools.cvat_job(r, j + 7))
            out.append((None, str(folder / f"job_{j}.xml"), "CVATImageDataset"))
        return out
    if fmt == "YOLOv5 per rater":
        return [(r, str(tools.yolov5(folder / r, r)), "YOLOv5Dataset") for r in boxes]
    if fmt == "CVAT project":
        (folder / "annotations.xml").write_text(project_xml(boxes))
        return [(None, str(folder / "annotations.xml"), "CVATImageDataset")]
    (folder / "export.json").write_text(json.dumps(tools.label_studio(), indent=2))
    return [{"rater": None, "path": str(folder / "export.json"), "format": "LabelStudioJSON"}]


def project_xml(boxes) -> str:
    """Every rater's replica task in one project export, CVAT's renaming of the later copies."""
    raters = list(boxes)
    tasks, images = [], []
    for k, r in enumerate(raters):
        tid = 4 + k
        tasks.append(f"<task><id>{tid}</id><name>replica {r}</name><size>2</size><mode>annotation</mode>"
                     "<overlap>0</overlap><bugtracker></bugtracker><subset>default</subset><start_frame>0"
                     "</start_frame><stop_frame>1</stop_frame><frame_filter></frame_filter><segments><segment>"
                     f"<id>{tid}</id><start>0</start><stop>1</stop><url>http://localhost:8080/api/jobs/{tid}</url>"
                     "</segment></segments><owner><username>admin</username><email></email></owner>"
                     f"<assignee><username>{r}</username><email></email></assignee></task>")
        names = ("a.jpg", "b.jpg") if not k else (f"a_{k}.jpg", f"b_{k}.jpg")
        images += tools._cvat_images(r, 2 * k, f' subset="default" task_id="{tid}"', names)
    meta = (f"<meta><project><id>3</id><name>replicas</name><bugtracker></bugtracker>{tools.LABELS}<tasks>"
            f"{''.join(tasks)}</tasks><owner><username>admin</username><email></email></owner><assignee></assignee>"
            f"</project>{tools.DUMPED}</meta>")
    return "\n".join(['<?xml version="1.0" encoding="utf-8"?>', "<annotations>", "  <version>1.1</version>", meta,
                      *images, "</annotations>"]) + "\n"


def labels_by_image(ds, key, raters) -> dict:
    """{(image, rater): sorted (class, box)} of every assigned rater; None for one not assigned."""
    fields = {r: f for f, r in ds.info["kalos_import"]["rater_fields"].items()}
    out = {}
    for s in ds:
        for k, r in enumerate(raters):
            value = s[fields[r]] if fields.get(r) else None
            out[s[key], k] = None if value is None else sorted(
                (d.label, tuple(d.bounding_box)) for d in value.detections)
    return out


def same_labels(got: dict, want: dict, tolerance: float) -> bool:
    if set(got) != set(want):
        return False
    for key, labels in want.items():
        other = got[key]
        if (labels is None) != (other is None) or (labels is not None and (
                len(labels) != len(other) or any(a[0] != b[0] or b[1] != pytest.approx(a[1], abs=tolerance)
                                                  for a, b in zip(labels, other)))):
            return False
    return True


@SETTINGS
@given(boxes=box_sets(), fmt=st.sampled_from(IMPORTED))
def test_every_format_imports_the_labels_of_the_multirater_coco_import(imports, tmp_path, boxes, fmt):
    tools.BOXES = boxes
    reference = imports.import_multirater_coco(f"kalos-prop-{uuid.uuid4().hex[:8]}", tools.multirater_coco(boxes),
                                               placeholders=False)
    files = {im["id"]: im["file_name"] for im in tools.multirater_coco(boxes)["images"]}
    want = {(files[i], k): v for (i, k), v in labels_by_image(reference, "coco_id", list(boxes)).items()}
    yolo = fmt.startswith("YOLO")
    got_ds = imports.import_rater_exports(f"kalos-prop-{uuid.uuid4().hex[:8]}",
                                          write_format(fmt, boxes, tmp_path / uuid.uuid4().hex), placeholders=False,
                                          match_by="stem" if yolo else "file_name",
                                          rater_names={str(k + 1): r for k, r in enumerate(sorted(boxes))}
                                          if fmt == "Label Studio" else None)
    got = labels_by_image(got_ds, "file_key", list(boxes))
    if fmt == "Label Studio":   # an uploaded file keeps Label Studio's prefix
        got = {(f.split("-", 1)[1], k): v for (f, k), v in got.items()}
    if yolo:   # matched by stem
        got = {(f"{f}.jpg", k): v for (f, k), v in got.items()}
    assert same_labels(got, want, 1e-6 if yolo else 1e-12), (got, want)
    reference.delete()
    got_ds.delete()


def spoil(text: str, how: str, where: float) -> bytes:
    """``text`` spoiled one way at a relative position ``where``."""
    at = int(len(text) * where)
    if how == "cut short":
        return text[:at].encode()
    if how == "latin-1":
        return text.replace("a.jpg", "ä.jpg").encode("latin-1")
    if how == "a key dropped":   # the next quoted name (JSON) or attribute (XML) loses its value
        for token in ('": ', '="'):
            k = text.find(token, at)
            if k > 0:
                end = text.find("," if token == '": ' else '"', k + len(token))
                return (text[:k + len(token)] + ('null' if token == '": ' else '') + text[max(end, k):]).encode()
        return text.encode()
    # a value of another type: the next number becomes text
    k = next((i for i in range(at, len(text)) if text[i].isdigit()), None)
    return text.encode() if k is None else (text[:k] + '"x"' + text[k + 1:]).encode()


@SETTINGS
@given(fmt=st.sampled_from(FORMATS), how=st.sampled_from(["cut short", "latin-1", "a key dropped", "another type"]),
       where=st.floats(0.05, 0.95))
def test_spoiled_files_are_imported_or_refused_in_words_and_write_nothing(imports, tmp_path, fo_isolated, fmt, how,
                                                                        where):
    from kalos_core.io import InvalidInputError

    boxes = {"r1": [("a.jpg", 0, 10.0, 20.0, 100.0, 200.0), ("b.jpg", 1, 300.0, 100.0, 50.0, 80.0)],
             "r2": [("a.jpg", 0, 12.0, 21.0, 98.0, 201.0), ("b.jpg", 0, 301.0, 99.0, 50.0, 80.0)]}
    exports = write_format(fmt, boxes, tmp_path / uuid.uuid4().hex)
    last = exports[-1]
    path = Path(last["path"] if isinstance(last, dict) else last[1])
    path.write_bytes(spoil(path.read_text(), how, where))
    target = f"kalos-prop-{uuid.uuid4().hex[:8]}"
    try:
        ds = imports.import_rater_exports(target, exports, placeholders=False)
    except (imports.ImportRefused, InvalidInputError) as e:
        assert "\n" not in str(e).strip() and "Traceback" not in str(e)
        assert path.name in str(e) or "rater" in str(e), str(e)   # the file, or the rater whose export it is
        assert not fo_isolated.dataset_exists(target)
        event("refused")
    else:
        ds.delete()
        event("imported")
