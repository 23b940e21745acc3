"""Driving a KaLOS panel as the App does, and the datasets the panel tests share."""

import copy
import json
import uuid

import numpy as np
import pydash

from .constants import PLUGIN
from .datasets import rater_dataset


# -- driving a panel as the App does ---------------------------------------------------------------

DISAGREEING = {"class_disagreement", "unmatched"}


def agreement_dataset(fo, demo, layout):
    """``demo`` in ``layout`` with an agreement run ``kalos`` (LSA at 0.3, 0.7, 0.9; bootstrap 200)."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run

    ds, fields = rater_dataset(fo, demo, layout)
    kw = {"rater_fields": fields} if layout == "rater_fields" else {"label_field": "raters"}
    compute_agreement_run(ds, run_key="kalos", lsa_thresholds=(0.3, 0.7, 0.9), bootstrap=200, **kw)
    return ds


def lodash_merge(dst, src, replace_lists: bool = False):
    """lodash ``merge``, which the App uses to draw a panel from its state and data (lists merged
    index by index: a longer list underneath shows through), or with ``replace_lists`` its
    ``mergeWith`` that replaces lists (the App's write of a panel form's values into the state)."""
    if isinstance(src, dict):
        out = copy.deepcopy(dst) if isinstance(dst, dict) else {}
        for k, v in src.items():
            out[k] = lodash_merge(out.get(k), v, replace_lists)
        return out
    if isinstance(src, list) and not replace_lists:
        out = copy.deepcopy(dst) if isinstance(dst, list) else []
        for i, v in enumerate(src):
            if i < len(out):
                out[i] = lodash_merge(out[i], v)
            else:
                out.append(lodash_merge(None, v))
        return out
    return copy.deepcopy(src)


class Panel:
    """Drives one panel as the App does: ``app`` is the App's own panel state (saved in its
    spaces, sent with every event), ``data`` its panel data, ``state`` what the panel's views
    show: the lodash merge of the two. A test that writes into ``state`` changes an input: the
    App's form then writes everything it shows into ``app`` (as FiftyOne 1.22's does)."""

    def __init__(self, ds, name):
        self.ds, self.uri, self.app, self.data, self.state = ds, f"{PLUGIN}/{name}", {}, {}, {}
        self.requests, self.output = [], None
        self.panel_id, self._shown = f"test-{uuid.uuid4().hex[:8]}", {}

    @property
    def app_keys(self) -> set:
        """The keys the App's own state holds a value for."""
        return {k for k, v in self.app.items() if v is not None}

    def call(self, method, view=None, **params):
        import fiftyone.operators as foo

        if self.state != self._shown:   # an input changed: the form writes what it shows
            self.app = lodash_merge(self.app, self.state, replace_lists=True)
        res = foo.execute_operator(self.uri, dataset=self.ds.name, **({} if view is None else {"view": view}), params={
            "panel_id": self.panel_id, "__method__": method, "panel_state": json.loads(json.dumps(self.app)),
            **params})
        assert res.error is None, res.error
        self.requests = res.executor.to_json()["requests"]
        json.dumps(self.requests, allow_nan=False)  # what the App receives must be plain JSON (no NaN)
        for r in self.requests:
            p = r["params"]
            if r["operator_uri"] == "patch_panel_state":
                for k, v in p["state"].items():
                    pydash.set_(self.app, k, copy.deepcopy(v))
            elif r["operator_uri"] == "patch_panel_data":
                for k, v in p["data"].items():
                    pydash.set_(self.data, k, copy.deepcopy(v))
            elif r["operator_uri"] == "show_panel_output":
                self.output = p["output"]
        self.state = lodash_merge(lodash_merge({}, self.app), self.data)
        self._shown = copy.deepcopy(self.state)
        return self

    def ops(self, uri):
        return [r["params"] for r in self.requests if r["operator_uri"] == uri]

    def view(self):
        """The view the last call set in the App, rebuilt from its serialized stages."""
        import fiftyone.core.view as fov

        (params,) = self.ops("set_view")
        return fov.DatasetView._build(self.ds, params["view"])

    def rendered(self):
        return set(self.output["type"]["properties"])


def rater_fields(ds):
    """The rater fields of the run ``kalos``."""
    return ds.get_run_info("kalos").config.rater_fields


def _hist(seed):
    rng = np.random.default_rng(seed)
    return [int(v) for v in rng.integers(0, 50, 20)]


CALIBRATION = {
    "task": "bbox", "n_images": 16, "seed": 0, "bootstrap": 200, "confidence": 0.95,
    "distances": {
        name: {"ks": ks, "ks_ci": [ks - 0.05, ks + 0.05], "tau_star": tau, "tau_ci": [tau - 0.04, tau + 0.03],
               "similarity_threshold": 1 - tau, "similarity_ci": [1 - tau - 0.03, 1 - tau + 0.04], "sigma": 0.08,
               "tau_method": "ks_crossing",
               "do": {"n": 500, "mean": 0.2, "median": 0.18, "std": 0.1, "mode": 0.15},
               "de": {"n": 4000, "mean": 0.9, "median": 0.95, "std": 0.1, "mode": 1.0},
               "histogram": {"edges": [k / 20 for k in range(21)], "do": _hist(1), "de": _hist(2)},
               "strata": None}
        for name, ks, tau in (("iou", 0.81, 0.42), ("giou", 0.77, 0.55))},
    "recommended": {"distance": "iou", "tau_star": 0.42, "similarity_threshold": 0.58, "standard_threshold": 0.5,
                    "reason": "highest KS"},
    "similarity_threshold": 0.58,
}


def store_calibration(ds, key="calibration", **config):
    """A calibration run ``key`` whose results are :data:`CALIBRATION` (a hand-made result)."""
    cfg = ds.init_run(method="kalos_calibration", similarity_threshold=CALIBRATION["similarity_threshold"], **config)
    ds.register_run(key, cfg, overwrite=True, cleanup=False)
    ds.save_run_results(key, ds.init_run_results(key, **CALIBRATION), overwrite=True)
