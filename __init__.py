"""FiftyOne plugin ``@kalos/agreement``: registers the operators and panels.

The engine lives in ``kalos_core`` next to this file (no FiftyOne import);
``operators/`` and ``panels/`` are thin adapters around it. Imports happen in
``register`` so that importing this file (as test collectors do) costs nothing.
"""

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


def register(p):
    from .operators.agreement import (
        BrowseDisagreements,
        ComputeAgreement,
        DeleteAgreementRun,
    )
    from .operators.attributes import ComputeAttributeAgreement
    from .operators.bae import ComputeBAE
    from .operators.calibrate import Calibrate
    from .operators.followup import BuildConsensus, ExportConsensusCoco, TagForReview
    from .operators.importing import ImportMultiraterCoco
    from .operators.label_studio_round import LoadLabelStudioRound, SendToLabelStudio
    from .operators.measures import (
        DeleteKalosRun,
        LabelConvergence,
        NoiseAwareEvaluation,
    )
    from .operators.rater_import import ImportRaterExports
    from .operators.simulate import SimulateRaters
    from .operators.variations import ComputeVariations

    # workflow order, as in fiftyone.yml: import, calibrate, agree, browse, look closer, follow up, clean up
    for cls in (ImportMultiraterCoco, ImportRaterExports, Calibrate, ComputeAgreement, BrowseDisagreements, ComputeVariations,
                BuildConsensus, ExportConsensusCoco, TagForReview, SendToLabelStudio, LoadLabelStudioRound, LabelConvergence, NoiseAwareEvaluation, ComputeBAE, ComputeAttributeAgreement, SimulateRaters,
                DeleteAgreementRun, DeleteKalosRun):
        p.register(cls)

    from .panels import PANELS

    for cls in PANELS:
        p.register(cls)
