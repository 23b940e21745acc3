"""The agreement measure: match the raters' instances into units, build the reliability
matrix, compute Krippendorff's α and the diagnostics (docs/method.md).

The pipeline, from the entry down:

- :mod:`.pipeline` ``compute_agreement`` / ``agreement_steps``: config, map over chunks, reduce;
- :mod:`.executors` where the chunks run (this process, processes, dask);
- :mod:`.partial` one chunk: match every image, batch the α of every matrix;
- :mod:`.chunk_kernel` the same for a chunk of column-held boxes in whole-array operations;
- :mod:`.problem` / :mod:`.bulk_match` one image's matching problem and its re-matches;
- :mod:`.diagnostics` / :mod:`.diagnostic_defs` the diagnostics' registry and definitions;
- :mod:`.label_map` per-label unit and status, built on first read;
- :mod:`.model_rater` a model's predictions as one more rater.
"""

from .pipeline import (CHUNK_SIZE, DIAGNOSTICS, MAX_DIAGNOSTIC_RATERS, AgreementConfig, AgreementResult,
                       agreement_steps, compute_agreement, finish)

__all__ = ["CHUNK_SIZE", "DIAGNOSTICS", "MAX_DIAGNOSTIC_RATERS", "AgreementConfig", "AgreementResult",
           "agreement_steps", "compute_agreement", "finish"]
