"""Reading what an operator showed the user: its last output card (from the App operations it yielded)."""

import re

#: operators whose cards need a real Label Studio server: checked in tests/labelstudio/test_label_studio_round.py
REAL_SERVER = ("send_to_label_studio", "load_label_studio_round")


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
