"""KaLOS panels for the FiftyOne App: one module per panel, shared helpers in ``common``
(run selection, empty state, chart bits), ``views`` (the views click handlers set) and
``ordering`` (rater cluster order, classical MDS). ``PANELS`` lists the panel classes
in the order the plugin registers them (and fiftyone.yml lists their names)."""

from .attributes import AttributeAgreementPanel
from .bae import BAEPanel
from .calibration import CalibrationPanel
from .classes import ClassDifficultyPanel
from .collaboration import CollaborationPanel
from .convergence import LabelConvergencePanel
from .noise_aware import NoiseAwarePanel
from .overview import AgreementOverviewPanel
from .sensitivity import LocalisationSensitivityPanel
from .variations import VariationTypesPanel
from .vitality import AnnotatorVitalityPanel

PANELS = (AgreementOverviewPanel, AnnotatorVitalityPanel, CollaborationPanel, CalibrationPanel,
          LocalisationSensitivityPanel, ClassDifficultyPanel, LabelConvergencePanel, NoiseAwarePanel,
          VariationTypesPanel, BAEPanel, AttributeAgreementPanel)
