"""CVAT for images 1.1 attributes read onto the imported labels, named as CVAT writes them: each
shape's ``<attribute name=..>value</attribute>`` (numbers and true/false as values, text as text)
and its ``occluded`` flag, ``0`` as False (FiftyOne's importer keeps only the 1s)."""

import uuid

from tests.fiftyone.helpers import import_tools

tools = import_tools()


def with_attributes(xml: str, box: str, occluded: str, attributes: dict) -> str:
    """``xml`` with the box whose ``xtl`` is ``box`` given CVAT's ``occluded`` flag and attributes."""
    head = f'occluded="0" xtl="{box}"'
    assert head in xml
    xml = xml.replace(head, f'occluded="{occluded}" xtl="{box}"', 1)
    start = xml.index(f'xtl="{box}"')
    end = xml.index("    </box>", start)
    tags = "".join(f'\n      <attribute name="{k}">{v}</attribute>' for k, v in attributes.items())
    return xml[:end] + tags.lstrip("\n") + "\n" + xml[end:]


def test_box_attributes_and_occluded_are_label_attributes(imports, tmp_path):
    alice = with_attributes(tools.cvat_job("alice", 7), "10.50", "1",
                            {"pose": "standing", "truncated": "true", "visible parts": "3", "plate": ""})
    bob = with_attributes(tools.cvat_job("bob", 8), "12.00", "0", {"pose": "sitting", "truncated": "false"})
    paths = []
    for rater, xml in (("alice", alice), ("bob", bob)):
        paths.append(tmp_path / f"job_{rater}.xml")
        paths[-1].write_text(xml)
    ds = imports.import_cvat_replicas(f"kalos-cvat-attr-{uuid.uuid4().hex[:8]}", [str(p) for p in paths],
                                      placeholders=False)
    a = ds.match({"file_key": "a.jpg"}).first()
    got_a, got_b = a.raters_alice.detections[0], a.raters_bob.detections[0]
    assert (got_a["pose"], got_a["truncated"], got_a["visible parts"], got_a["occluded"]) == ("standing", True, 3, True)
    assert (got_b["pose"], got_b["truncated"], got_b["occluded"]) == ("sitting", False, False)
    # the dog box on b.jpg carries no attribute: not occluded (CVAT wrote occluded="0"), nothing else
    other = ds.match({"file_key": "b.jpg"}).first().raters_alice.detections[0]
    assert other["occluded"] is False and not other.has_field("pose")
