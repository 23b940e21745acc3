"""A CVAT project export (CVAT for images 1.1) whose tasks annotate the same frames: one rater per task.

CVAT writes a project export as one ``annotations.xml``: ``<meta><project>`` lists the project's
``<labels>`` and its ``<tasks>`` (each with its id, name, ``<segments>`` = jobs, ``<assignee>``),
and every ``<image>`` carries the ``task_id`` of the task it belongs to. When the tasks are
replicas (the same images uploaded to several tasks, each annotated by someone else) each task is
one rater. :func:`read_cvat_project` splits the file into one task export per task (the task's
meta with the project's labels, its images) and reads each with FiftyOne's CVAT importer through
:func:`read_export`, images optional as there. The rater is the task's assignee, else the
assignee of its only job, else the task's name, else ``task <id>``.

CVAT writes one name per image of the whole project and subset: the copy of ``a.jpg`` in a later
task (tasks in id order) is written ``a_1.jpg``, the next ``a_2.jpg``, and ``a_1_1.jpg`` where an
upload named ``a_1`` exists already (its ``mangle_image_name``; the count is per subset and per
name less its extension). :func:`uploaded_names` replays that naming to give every image back the
name it was uploaded with, so the copies of one frame are matched across the tasks.

A task export (``<meta><task>``) or a job export (``<meta><job>``) is one rater: CVAT merges the
jobs of a task into one set of labels, so replica jobs come one XML per job.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import xml.etree.ElementTree as ET

from .checks import check_cvat_xml
from .errors import ImportRefused
from .exports import read_export


def cvat_meta(xml_path: str):
    """The ``<meta>`` element of a CVAT XML file (None when it has none before its first image)."""
    try:
        for _, elem in ET.iterparse(xml_path, events=("end",)):
            if elem.tag == "meta":
                return elem
            if elem.tag in ("image", "track"):   # past the header
                return None
    except ET.ParseError as e:
        raise ImportRefused(f"is not complete XML ({e})", xml_path,
                            fix="the file is cut short, damaged or not a CVAT export: export it from CVAT again") \
            from None
    return None


def assignee(node) -> str:
    """The username of a CVAT ``<assignee>`` under ``node`` ('' when none)."""
    return (node.findtext("assignee/username") or node.findtext("assignee") or "").strip()


def cvat_rater(xml_path: str) -> str:
    """Who made a CVAT-for-images 1.1 job (or task) export: the job's (or task's) assignee, else
    ``job <id>``, else the file name without extension (consensus replicas come one XML per job)."""
    meta = cvat_meta(xml_path)
    for part in ("job", "task"):
        node = meta.find(part) if meta is not None else None
        if node is None:
            continue
        if assignee(node):
            return assignee(node)
        if part == "job" and (node.findtext("id") or "").strip():
            return f"job {node.findtext('id').strip()}"
    return os.path.splitext(os.path.basename(xml_path))[0]


def is_project_export(xml_path: str) -> bool:
    """Whether a CVAT XML file is a project export (``<meta><project>``)."""
    meta = cvat_meta(xml_path) if os.path.isfile(xml_path) else None
    return meta is not None and meta.find("project") is not None


def _task_rater(task) -> str:
    who = assignee(task)
    jobs = task.findall("segments/segment")
    if not who and len(jobs) == 1:
        who = assignee(jobs[0])
    return who or (task.findtext("name") or "").strip() or f"task {(task.findtext('id') or '').strip()}"


def _next_name(counts, subset: str, stem: str) -> str:
    """The name (less its extension) CVAT's project export gives the next image uploaded as ``stem``."""
    k = counts.get((subset, stem), 0)
    if not k:
        return stem
    renamed = f"{stem}_{k}"
    i = 0
    while counts.get((subset, renamed), 0):
        i += 1
        renamed = f"{stem}_{k}_{i}"
    return renamed


def uploaded_names(tasks: list) -> None:
    """Give every ``<image>`` of a project export's tasks (``[(task id, [image elements])]``) the name
    it was uploaded with, undoing CVAT's renaming of later copies (see the module docstring); the name
    CVAT wrote is kept in the image's ``exported_name`` attribute."""
    counts: dict = {}
    for _, images in sorted(tasks, key=lambda t: (len(t[0]), t[0])):   # numeric ids in CVAT's (id) order
        here = set()
        for im in images:
            name, subset = im.get("name") or "", im.get("subset") or ""
            if "." not in os.path.basename(name):
                continue
            stem, ext = name.rsplit(".", 1)
            # the shortest upload first: of two uploads renamed alike, CVAT (frames in name order) met it first
            candidates = [c for c in (re.sub(r"_\d+_\d+$", "", stem), re.sub(r"_\d+$", "", stem)) if c != stem]
            original = next((c for c in candidates
                             if f"{c}.{ext}" not in here and _next_name(counts, subset, c) == stem), stem)
            counts[(subset, original)] = counts.get((subset, original), 0) + 1
            here.add(f"{original}.{ext}")
            if original != stem:
                im.set("exported_name", name)
                im.set("name", f"{original}.{ext}")


def project_tasks(xml_path: str, root) -> list[dict]:
    """``[{"id", "rater", "task", "images"}]`` of a project export (``root`` its parsed XML), one per
    task that holds images, checked: at least two tasks, each sharing a frame (image name) with another."""
    project = root.find("meta/project")
    tasks = {(t.findtext("id") or "").strip(): t for t in project.findall("tasks/task")}
    images: dict = {}
    for im in root.findall("image"):
        tid = im.get("task_id")
        if tid not in tasks:
            raise ImportRefused(f"image {im.get('name')!r} of the CVAT project export {xml_path} has task_id "
                             f"{tid!r}, not a task of its <meta><project><tasks> ({', '.join(tasks) or 'none'}); "
                             "export the project again")
        images.setdefault(tid, []).append(im)
    uploaded_names(list(images.items()))
    for tid, ims in images.items():
        seen: dict = {}
        for im in ims:
            first = seen.setdefault(im.get("name"), im)
            if first is not im:
                raise ImportRefused(f"images {first.get('id')!r} and {im.get('id')!r} of task {tid} were uploaded as "
                                    f"{im.get('name')!r}: their labels cannot be told apart", xml_path,
                                    fix="give every image of a task its own file name")
    held = [t for t in tasks if t in images]
    if len(held) < 2:
        raise ImportRefused(f"the CVAT project export {xml_path} holds {len(held)} task with images: one rater. "
                         "A project export is read as replicas, one rater per task over the same frames; for "
                         "consensus replica jobs export each job (one XML per job) and give every XML")
    names = {t: {im.get("name") for im in images[t]} for t in held}
    for t in held:
        if not any(names[t] & names[o] for o in held if o != t):
            raise ImportRefused(f"task {t} ({tasks[t].findtext('name')!r}) of the CVAT project export {xml_path} shares "
                             "no image with the other tasks: a project export is read as replicas (every task "
                             "annotates the same frames, one rater per task); export the replica tasks only, or "
                             "import this task's own export as another rater's")
    out = [{"id": t, "rater": _task_rater(tasks[t]), "task": tasks[t], "images": images[t]} for t in held]
    raters = [p["rater"] for p in out]
    for p in out:
        if raters.count(p["rater"]) > 1:   # one person on two replica tasks: two raters, told apart
            p["rater"] = f"{p['rater']} (task {p['id']})"
    labels = project.find("labels")
    for p in out:
        if p["task"].find("labels") is None and labels is not None:
            p["task"].append(labels)
    return out


def _write_task(part: dict, version: str, path: str) -> None:
    """One task of a project export as a task export FiftyOne's CVAT importer reads."""
    root = ET.Element("annotations")
    ET.SubElement(root, "version").text = version
    meta = ET.SubElement(root, "meta")
    meta.append(part["task"])
    root.extend(part["images"])
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def read_cvat_project(xml_path: str, data_path=None, match_by="file_name", label_key=None, **options) -> dict:
    """``{rater: {key: ExportImage}}`` of a CVAT project export, one rater per task (see the module)."""
    check_cvat_xml(xml_path)
    root = ET.parse(xml_path).getroot()
    parts = project_tasks(xml_path, root)
    version = (root.findtext("version") or "1.1").strip()
    folder = tempfile.mkdtemp(prefix="kalos_cvat_")
    try:
        out = {}
        for p in parts:
            path = os.path.join(folder, f"task_{p['id']}.xml")
            _write_task(p, version, path)
            try:
                out[p["rater"]] = read_export(path, "CVATImageDataset", data_path, match_by, label_key, **options)
            except ValueError as e:   # the task's own file is a temporary one: name the project's
                message = str(e).replace(path, f"{xml_path}, task {p['id']}")
                raise ImportRefused(message if xml_path in message else f"{xml_path}, task {p['id']}: {message}") \
                    from None
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)
