"""Reading what an operator showed the user: its last output card (from the App operations it yielded)."""


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
