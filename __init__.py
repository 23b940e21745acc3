"""FiftyOne plugin ``@kalos/agreement``: registers the operators and panels.

The engine lives in ``kalos_core`` next to this file (no FiftyOne import); every measure's
FiftyOne side is declared once in ``fiftyone_layer/measures/`` and found through
``fiftyone_layer/registry.py``, from which the operators and panels registered here (and
``fiftyone.yml``) are derived; ``operators/`` and ``panels/`` are thin adapters around it.
Imports happen in ``register`` so that importing this file (as test collectors do) costs nothing.
"""

import importlib
import importlib.abc
import importlib.machinery
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


class _EngineFinder(importlib.abc.MetaPathFinder):
    """Makes ``kalos_core`` (and only it) importable from this folder.

    Putting the folder itself on ``sys.path`` would also turn ``operators``, ``panels``,
    ``tests`` and ``benchmarks`` into top-level packages of the FiftyOne server (a second
    copy of the adapters for anyone importing ``operators``). The plugin's own modules
    import each other relatively; ``kalos_core`` is the one absolute name they share.
    """

    def find_spec(self, name, path=None, target=None):
        if name != "kalos_core":
            return None     # submodules are found through the package's own __path__
        return importlib.machinery.PathFinder.find_spec(name, [_HERE])


if not any(isinstance(f, _EngineFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _EngineFinder())   # the plugin's own engine, whatever else is installed


def operator_classes() -> list:
    """Every operator class of the plugin, in the order of ``fiftyone_layer.registry.operator_paths``
    (a measure without an operator class of its own gets the generic one)."""
    from .fiftyone_layer import registry
    from .operators.measure_operator import operator_class

    runs = {r.measure: r for r in registry.plugin_runs()}
    return [operator_class(runs[path[1:]]) if path.startswith("=") else _resolve("operators", path)
            for path in registry.operator_paths()]


def _resolve(package: str, path: str):
    """The class ``"module:Class"`` names under the plugin's ``package``."""
    module, name = path.split(":")
    return getattr(importlib.import_module(f"{__name__}.{package}.{module}"), name)


def register(p):
    from .panels import PANELS

    for cls in (*operator_classes(), *PANELS):
        p.register(cls)
