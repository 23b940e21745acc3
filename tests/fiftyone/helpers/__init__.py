"""Helpers shared by the tests of tests/fiftyone and tests/labelstudio (plain modules, not collected;
fixtures are in conftest.py), one module per responsibility: calling operators and reading their
cards (operators), small datasets (datasets), driving a panel (panels), rater exports as the tools
write them (exports), the tests over every registered operator and panel (common)."""

from .constants import (PLUGIN, COMPUTE, REAL_SERVER)  # noqa: F401
from .operators import (run_operator, resolved_form, form_errors, run_agreement, BOX, same_boxes_dataset,
    snapshot, try_operator, refused, shown_result, shown_card, check_card)  # noqa: F401
from .datasets import (demo_data, rater_dataset, model_dataset, THREE_RATER_FIELDS, three_raters,
    model_rater_dataset, MODEL_RATER_FIELDS, video_dataset)  # noqa: F401
from .panels import (DISAGREEING, agreement_dataset, lodash_merge, Panel, rater_fields, CALIBRATION,
    store_calibration)  # noqa: F401
from .exports import (new_name, coco_per_rater, dump, agreement_of, reference, check_same_alpha, lvis_subset,
    cvat_labels, cvat_images, HEAD, DUMPED, whole_pixels, label_studio_tasks, brush_rle,
    check_label_studio_cancelled_polygons_and_brush_masks)  # noqa: F401
from tests.core.helpers import (cvat_export, ls_export, ls_rle, painted, scorecard_anns, truth_mask,
    write_png)  # noqa: F401  (the engine tests' writers, for the FiftyOne and Label Studio tests)
from .common import (registered, run_writers, form_params, common_run_params, common_dataset,
    validation_errors, declared, bad_values, run_state, import_tools)  # noqa: F401
