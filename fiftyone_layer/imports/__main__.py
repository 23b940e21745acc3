"""``python -m fiftyone_layer.imports``: the import command line (:mod:`.cli`)."""

import sys

from .cli import main

sys.exit(main())
