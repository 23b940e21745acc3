"""Reading what an operator showed the user: its last output card (from the App operations it yielded)."""


def _shown(res) -> dict:
    return [r for r in res.executor.to_json()["requests"] if r["operator_uri"] == "show_output"][-1]["params"]


def shown_result(res) -> dict:
    """The results of the last output card an operator showed."""
    return _shown(res)["results"]


def shown_card(res) -> tuple[str, list[tuple[str, str]], dict]:
    """``(title, [(label, text) in order], results)`` of the last card an operator showed."""
    shown = _shown(res)
    props = shown["outputs"]["type"]["properties"]
    rows = [(p["view"]["label"], shown["results"].get(name)) for name, p in props.items()]
    return shown["outputs"]["view"]["label"], rows, shown["results"]
