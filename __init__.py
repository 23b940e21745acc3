"""FiftyOne plugin ``@kalos/agreement``: registers the operators and panels.

The engine lives in ``kalos_core`` next to this file (no FiftyOne import);
``operators/`` and ``panels/`` are thin adapters around it. Imports happen in
``register`` so that importing this file (as test collectors do) costs nothing.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:  # make ``kalos_core`` importable when FiftyOne loads the plugin
    sys.path.insert(0, _HERE)


def register(p):
    from .operators.agreement import BrowseDisagreements, ComputeAgreement, DeleteAgreementRun
    from .operators.importing import ImportMultiraterCoco

    for cls in (ImportMultiraterCoco, ComputeAgreement, DeleteAgreementRun, BrowseDisagreements):
        p.register(cls)

    from .operators.calibrate import Calibrate

    p.register(Calibrate)

    from .operators.simulate import SimulateRaters

    p.register(SimulateRaters)

    from .panels import PANELS

    for cls in PANELS:
        p.register(cls)
