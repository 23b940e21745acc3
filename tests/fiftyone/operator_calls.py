"""Calling the plugin's operators as the App does: run one, resolve its form, read the form's errors."""

PLUGIN = "@kalos/agreement"


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
    """The operator's resolved input form, as {name: property}."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    ctx = ExecutionContext(request_params={"dataset_name": ds.name, "params": params})
    return foo.get_operator(_uri(name)).resolve_input(ctx).type.properties


def form_errors(props: dict) -> dict:
    """{property: its error message} for every invalid property of a resolved form."""
    return {k: p.error_message for k, p in props.items() if p.invalid}
