"""The real Label Studio server's fixtures (tests/labelstudio/server.py) for the tests in this folder."""

from tests.labelstudio.server import label_studio, label_studio_sdk  # noqa: F401  (fixtures)
