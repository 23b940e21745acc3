"""fiftyone.yml lists exactly what the plugin registers (FiftyOne silently drops an operator or
panel that is registered but not listed, and lists nothing for a name it cannot find)."""

import importlib
import os
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


class Recorder:
    """Stands in for FiftyOne's plugin context: records what ``register(p)`` registers."""

    def __init__(self):
        self.operators, self.panels = [], []

    def register(self, cls):
        import fiftyone.operators as foo

        (self.panels if issubclass(cls, foo.Panel) else self.operators).append(cls().config.name)


def registered() -> Recorder:
    plugin = importlib.import_module("fiftyone.plugins.orgs.kalos.agreement")   # loaded by tests/conftest.py
    rec = Recorder()
    plugin.register(rec)
    return rec


def test_fiftyone_yml_lists_exactly_the_registered_operators_and_panels():
    """fiftyone.yml is written from the measures' declarations (fiftyone_layer/registry.py); with
    ``KALOS_WRITE_MANIFEST=1`` this test writes it anew."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer import registry

    path = REPO / "fiftyone.yml"
    text = path.read_text()
    rec = registered()
    expected = registry.manifest(rec.operators, rec.panels, text.split("\noperators:")[0])
    if os.environ.get("KALOS_WRITE_MANIFEST"):
        path.write_text(expected)
    assert text == expected, "fiftyone.yml is not the registry's: KALOS_WRITE_MANIFEST=1 pytest tests/fiftyone/test_manifest.py"
    manifest = yaml.safe_load(text)
    assert rec.operators == manifest["operators"] and rec.panels == manifest["panels"]
    assert len(set(rec.operators)) == len(rec.operators) and len(set(rec.panels)) == len(rec.panels)


def test_every_registered_panel_reaches_the_app(fo_isolated):
    import fiftyone.operators as foo

    listed = {o.uri for o in foo.list_operators(type="panel")}
    assert {f"@kalos/agreement/{name}" for name in registered().panels} <= listed


NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                "sixteen seventeen eighteen nineteen twenty twenty-one twenty-two twenty-three twenty-four").split()


def test_the_docs_name_and_count_every_registered_operator_and_panel():
    """README and docs/app.md say how many operators and panels there are; docs/app.md has a row
    for every operator and docs/panels.md one for every panel (a new measure's too)."""
    rec = registered()
    ops, panels = NUMBER_WORDS[len(rec.operators)], NUMBER_WORDS[len(rec.panels)]
    flat = lambda path: " ".join((REPO / path).read_text().split())
    assert f"{ops} operators, {panels} panels" in flat("README.md")
    app = flat("docs/app.md")
    assert f"adds {ops} operators" in app and f"and {panels} panels" in app
    assert [o for o in rec.operators if f"`@kalos/agreement/{o}`" not in app] == []
    assert [p for p in rec.panels if f"| `{p}` |" not in flat("docs/panels.md")] == []


def test_docs_app_places_every_operator_in_the_workflow_order():
    """The operator browser sorts a search's matches by label, so docs/app.md says the order to
    use them in: every registered operator's label once in that list, none that does not exist."""
    import re

    plugin = importlib.import_module("fiftyone.plugins.orgs.kalos.agreement")
    labels = [cls().config.label for cls in plugin.operator_classes()]
    text = (REPO / "docs" / "app.md").read_text().split("## The operators")[1].split("| operator |")[0]
    named = re.findall(r"\*(KaLOS: [^*]+)\*", text.replace("\n   ", " "))
    assert sorted(named) == sorted(labels), (set(labels) - set(named), set(named) - set(labels))
