"""KaLOS panels for the FiftyOne App: one module per panel, shared helpers in ``common``
(run selection, empty state, chart bits), ``views`` (the views click handlers set) and
``ordering`` (rater cluster order, classical MDS).

``PANELS`` are the panel classes the measures' declarations name (``RUN.app.panels``, found through
``fiftyone_layer/registry.py``), in the order the plugin registers them and fiftyone.yml lists them;
each panel's run kind (``METHOD``) and action (``ACTION_URI``, the operator that computes a run) are
set from that declaration.
"""

import importlib

from ..fiftyone_layer import registry


def _panels() -> tuple:
    panels = []
    for run in registry.plugin_runs():
        for path in run.app.panels:
            module, name = path.split(":")
            cls = getattr(importlib.import_module(f"{__name__}.{module}"), name)
            cls.METHOD, cls.ACTION_URI = run.method, registry.operator_uri(run.measure)
            panels.append(cls)
    return tuple(panels)


PANELS = _panels()
