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
