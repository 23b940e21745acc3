"""The panels' way to the run store (``operators/run_store.py``): the one implementation of
listing and loading runs, imported from wherever the panels live.

Inside the plugin both folders are subpackages of the plugin's package, so the relative import
works; in tests and notebooks (the repository root on ``sys.path``) ``panels`` and ``operators``
are top-level packages and the store is ``operators.run_store``.
"""

try:
    from ..operators import run_store as store
except ImportError:          # panels imported as a top-level package
    from operators import run_store as store

runs_of = store.runs_of
load_results = store.load_results
describe_run = store.describe_run

__all__ = ["describe_run", "load_results", "runs_of", "store"]
