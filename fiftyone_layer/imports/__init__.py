"""Imports of annotation-tool exports into a FiftyOne dataset, one rater per field.

The public interface (everything else in this package is private to it):

- :func:`import_multirater_coco`, :func:`import_multirater_yolo`: one multi-rater file or folder set;
- :func:`import_rater_exports`: one export per rater in any format FiftyOne reads, a CVAT
  project export (one rater per replica task) or a Label Studio project export (every annotator);
  :func:`import_cvat_replicas` and :func:`import_label_studio` are its shortcuts;
- :func:`import_video_exports`: one video export per rater (MOT text, CVAT for video 1.1 XML)
  into one frame field per rater of a video dataset;
- :func:`import_masks`: semantic masks, one ``fo.Segmentation`` field per rater (per-rater mask
  folders, CVAT "Segmentation mask" exports, a Label Studio brush export; :mod:`.masks`);
- :class:`ImportRefused`: every refusal, raised before anything is written, naming the file,
  the place in it and the fix;
- ``python -m fiftyone_layer.imports`` from a clone: the command line (:mod:`.cli`).

The operators (``operators/importing.py``, ``operators/rater_import.py``) and the Label Studio
round call these and the step generators (``coco_steps``, ``exports_steps``) for progress.
"""

from .coco import (
    VALIDATE_MAX_BYTES,
    check_coco_file,
    coco_steps,
    import_multirater_coco,
    import_multirater_yolo,
)
from .cvat_project import cvat_rater
from .errors import ImportRefused
from .exports import MATCH_BY, image_types
from .masks import MASK_FORMATS, import_masks, mask_import_steps
from .rater_exports import (
    ID_FIELD,
    LABEL_STUDIO,
    exports_steps,
    import_cvat_replicas,
    import_label_studio,
    import_rater_exports,
    one_label_type,
    parse_rater_names,
)
from .schema import (
    LABEL_TYPES,
    LAYOUTS,
    MAX_RATER_FIELDS,
    declare_label_fields,
    field_names,
)
from .video import VIDEO_FORMATS, import_video_exports, video_steps

__all__ = [
    "ID_FIELD",
    "LABEL_STUDIO",
    "LABEL_TYPES",
    "LAYOUTS",
    "MASK_FORMATS",
    "MATCH_BY",
    "MAX_RATER_FIELDS",
    "VALIDATE_MAX_BYTES",
    "VIDEO_FORMATS",
    "ImportRefused",
    "check_coco_file",
    "coco_steps",
    "cvat_rater",
    "declare_label_fields",
    "exports_steps",
    "field_names",
    "image_types",
    "import_cvat_replicas",
    "import_label_studio",
    "import_masks",
    "import_multirater_coco",
    "import_multirater_yolo",
    "import_rater_exports",
    "import_video_exports",
    "mask_import_steps",
    "one_label_type",
    "parse_rater_names",
    "video_steps",
]
