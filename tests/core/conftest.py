"""tests/core: this folder on sys.path, for the tests-only reference twin ``agreement_reference``."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
