"""Calling the plugin's operators as the App does, and reading the cards they show."""

import re
import uuid


from .constants import COMPUTE, PLUGIN


# -- calling operators ---------------------------------------------------------------------------

def _uri(name: str) -> str:
    return name if name.startswith("@") else f"{PLUGIN}/{name}"


def run_operator(name: str, ds, **params):
    """Execute the operator (a name under the plugin, or a full URI) on ``ds``; raise its error."""
    import fiftyone.operators as foo

    res = foo.execute_operator(_uri(name), dataset=ds.name, params=params)
    if res.error:
        raise RuntimeError(res.error)
    return res


def resolved_form(name: str, ds, **params) -> dict:
    """The operator's resolved input form, as {name: property} (``ds`` a dataset or a view)."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    ctx = ExecutionContext({"dataset_name": ds._dataset.name, "view": ds.view()._serialize(), "params": params})
    return foo.get_operator(_uri(name)).resolve_input(ctx).type.properties


def form_errors(props: dict) -> dict:
    """{property: its error message} for every invalid property of a resolved form."""
    return {k: p.error_message for k, p in props.items() if p.invalid}


def run_agreement(ds, **params):
    """compute_agreement on ``ds`` (run key ``kalos`` unless given); raise its error."""
    params.setdefault("run_key", "kalos")
    return run_operator(COMPUTE, ds, **params)


BOX = [0.1, 0.1, 0.3, 0.3]


def same_boxes_dataset(fo, raters=("a", "b", "c"), n=4, rater_list=True):
    """``n`` samples on which every rater drew the same two boxes (fields ``raters_<r>``)."""
    ds = fo.Dataset(f"kalos-safety-{uuid.uuid4().hex[:8]}")
    samples = []
    for k in range(n):
        s = fo.Sample(filepath=f"/nonexistent/{k}.jpg", coco_id=k + 1)
        if rater_list:
            s["rater_list"] = list(raters)
        for r in raters:
            s[f"raters_{r}"] = fo.Detections(detections=[
                fo.Detection(label="cat", bounding_box=BOX),
                fo.Detection(label="dog", bounding_box=[0.5, 0.5, 0.2, 0.2 + 0.01 * k])])
        samples.append(s)
    ds.add_samples(samples)
    del samples
    return ds


def snapshot(ds):
    """Everything a run could touch: the stored documents, the schema, runs, saved views, info."""
    import fiftyone.core.odm as foo_odm
    ds.reload()
    from bson import json_util
    docs = json_util.dumps(foo_odm.get_db_conn()[ds._sample_collection_name].find({}, sort=[("_id", 1)]))
    schema = {k: (type(v).__name__, type(getattr(v, "field", None)).__name__,
                  getattr(getattr(v, "document_type", None), "__name__", None))
              for k, v in ds.get_field_schema(flat=True).items()}
    return docs, schema, sorted(ds.list_runs()), sorted(ds.list_saved_views()), dict(ds.info or {})


def try_operator(uri, ds, view=None, **params):
    """Execute the operator (a name under the plugin, or a full URI); its result, error or not."""
    import fiftyone.operators as foo
    return foo.execute_operator(_uri(uri), dataset=ds.name, view=view, params=params)


def refused(uri, ds, match, **params):
    """The operator refuses (form error or execution error) with ``match``, writing nothing."""
    from fiftyone.operators.executor import ExecutionError
    before = snapshot(ds)
    try:
        res = try_operator(uri, ds, **params)
        message = res.error_message or ""
        assert res.error, f"{uri} did not fail"
    except ExecutionError as e:
        message = str(e)
    assert match in message, message
    assert snapshot(ds) == before
    return message


# -- what an operator showed ---------------------------------------------------------------------

def _shown(res) -> dict:
    return [r for r in res.executor.to_json()["requests"] if r["operator_uri"] == "show_output"][-1]["params"]


def shown_result(res) -> dict:
    """The results of the last output card an operator showed."""
    return _shown(res)["results"]


def shown_card(res) -> tuple[str, list[tuple[str, str]], dict]:
    """``(title, [(label, text) in order], results)`` of the last card an operator showed (its title:
    the success box heading it)."""
    shown = _shown(res)
    props = shown["outputs"]["type"]["properties"]
    assert props["title"]["view"]["name"] == "Success" and list(props)[0] == "title"   # the title shown first
    rows = [(p["view"]["label"], shown["results"][name]) for name, p in props.items() if name != "title"]
    return props["title"]["view"]["label"], rows, shown["results"]


def check_card(title: str, rows: list) -> None:
    """Every operator's card: a KaLOS title, headline numbers, then Written / Run key / Next, each filled
    in, numbers rounded for people (never more than three decimals)."""
    labels = [label for label, _ in rows]
    assert title.startswith("KaLOS: ") and "failed" not in title
    assert labels[-3:] == ["Written", "Run key", "Next"] and len(labels) >= 4, labels
    assert all(isinstance(text, str) and text.strip() for _, text in rows), rows
    long = [(label, text) for label, text in rows if re.search(r"\d\.\d{4,}", text)]
    assert not long, long
