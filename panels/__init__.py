"""KaLOS panels for the FiftyOne App: one module per panel, shared helpers in ``common``
(run selection, empty state, chart bits), ``views`` (the views click handlers set) and
``ordering`` (rater cluster order, classical MDS).

``PANELS`` are the panel classes the measures' declarations name (``RUN.app.panels``, found through
``fiftyone_layer/registry.py``), in the order the plugin registers them and fiftyone.yml lists them.
"""

import importlib

from ..fiftyone_layer import registry


def _panel(path: str):
    module, name = path.split(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


PANELS = tuple(_panel(path) for path in registry.panel_paths())
