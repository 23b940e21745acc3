"""The plugin's one FiftyOne layer, shared by ``operators/`` and ``panels/``.

Reading the raters' labels (:mod:`.adapter`), the run store (:mod:`.run_store`), write-back
(:mod:`.writeback`), a measure's run on a collection (:mod:`.measure_runs`), saved views and
the click-view builders (:mod:`.views`, :mod:`.view_rules`, :mod:`.saved_views`), status
colours (:mod:`.status_colors`), placeholders for image-less samples and a model's predictions
as input (:mod:`.placeholders`, :mod:`.predictions`, :mod:`.model_inputs`), two runs' per-sample α
on the samples both scored (:mod:`.paired_alpha`), every import from an annotation tool's export
and its command line (:mod:`.imports`). Panels import only this layer, never an operator module.
"""
