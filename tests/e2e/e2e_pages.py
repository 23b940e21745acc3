"""The browser tests' one helpers module (marker ``e2e``; fixtures are in conftest.py).

Facts about the demo data set and the plugin's panels (the App servers, the demo build and chromium
are conftest.py's fixtures).

Driving the FiftyOne App 1.22.1 in the browser: selectors and page actions. Selectors are the App's
own ``data-cy`` hooks (from the shipped bundle); panels are opened the way a user does (the "+"
next to the Samples tab), plotly charts are clicked by coordinates (plotly listens on its drag
layer, not on the bar elements).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

# what the browser tests take from the FiftyOne and Label Studio tests' helpers, so that a browser test
# imports this one module
from tests.fiftyone.helpers import REAL_SERVER, new_name  # noqa: F401
from tests.labelstudio.server import USERS, file_names, post_round1_boxes  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
DATASET = "kalos-demo"
VIEWPORT = {"width": 1600, "height": 1000}  # also the size of the documentation screenshots

def panels_needing_a_run() -> dict[str, str]:
    """Registered panel -> the run kind it shows, for every panel not of agreement runs (the
    plugin's own registry: a new panel is covered without editing the tests)."""
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.run_store import AGREEMENT
    from fiftyone.plugins.orgs.kalos.agreement.panels import PANELS

    return {cls().config.name: cls.METHOD for cls in PANELS if cls.METHOD != AGREEMENT}


def has_run(method: str) -> bool:
    """Does the demo data set hold a run of kind ``method``?"""
    import fiftyone as fo

    ds = fo.load_dataset(DATASET)
    return any(getattr(ds.get_run_info(k).config, "method", None) == method for k in ds.list_runs())


def panel_names(yml: Path = REPO / "fiftyone.yml") -> list[str]:
    """The ``panels:`` entries of fiftyone.yml (a plain list; no YAML dependency needed)."""
    names, inside = [], False
    for line in yml.read_text().splitlines():
        if re.match(r"^\S", line):
            inside = line.split(":")[0].strip() == "panels"
            continue
        m = re.match(r"^\s*-\s*['\"]?([\w.-]+)", line)
        if inside and m:
            names.append(m.group(1))
    return names


def parse_count(text: str) -> int | None:
    """The first integer of the grid's count ("1,234 samples", "12 of 40 samples")."""
    m = re.search(r"\d[\d,]*", text or "")
    return int(m.group(0).replace(",", "")) if m else None


def save_png(data: bytes, path: Path) -> None:
    """A screenshot as a 256-colour PNG (about a quarter of the size; text stays crisp)."""
    import io

    from PIL import Image

    img = Image.open(io.BytesIO(data)).convert("RGB")
    img.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(path, optimize=True)


# -- driving the App in the browser ------------------------------------------------------------

COUNT = '[data-cy="entry-counts"]'
GRID = '[data-cy="fo-grid"]'
CLEAR_VIEW = '[data-cy="btn-clear-view-bar"]'
NEW_PANEL = '[data-cy="new-panel-btn"]'
OPERATOR_BROWSER = '[data-cy="operators-browser"]'
OPERATOR_SEARCH = '[data-cy="operators-browser-search"]'
PLOT = ".js-plotly-plot"
#: the operation name of a GraphQL request body
GRAPHQL_NAME = re.compile(r"(?:query|mutation|subscription)\s+(\w+)")


def panel_tab(name: str) -> str:
    return f'[data-cy="panel-tab-{name.lower()}"]'


def grid_count(page) -> int | None:
    loc = page.locator(COUNT).first
    return parse_count(loc.inner_text()) if loc.count() else None


def wait_for_count(page, predicate, timeout: float = 30.0, what: str = "") -> int | None:
    """Poll the grid's sample count until ``predicate(count)``; returns the last count seen."""
    deadline = time.monotonic() + timeout
    seen = None
    while True:
        try:
            seen = grid_count(page)
        except Exception:  # the count element re-renders while the view changes
            seen = None
        if seen is not None and predicate(seen):
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"grid count {seen!r} never satisfied {what or predicate} within {timeout:.0f} s")
        page.wait_for_timeout(250)


def wait_for_tiles(page, timeout: float = 60.0) -> int:
    """Wait until the grid has drawn sample tiles (lookers with a canvas); returns how many."""
    deadline = time.monotonic() + timeout
    while True:
        n = page.evaluate("() => document.querySelectorAll('[data-cy=\"fo-grid\"] [data-cy=\"looker\"] canvas').length")
        if n or time.monotonic() > deadline:
            if not n:
                raise AssertionError(f"the grid drew no sample tile within {timeout:.0f} s")
            return n
        page.wait_for_timeout(250)


def wait_for_quiet(page, quiet_s: float = 1.0, timeout: float = 30.0) -> float:
    """Wait until the page has sent and finished no request for ``quiet_s`` (the grid's
    thumbnails loaded, the App's queries answered), the App's long-lived event stream
    (``/events``) aside; Playwright's "networkidle" never comes because of it. Returns the
    seconds waited. Requests begun before the call count from their end."""
    busy, last = set(), [time.monotonic()]

    def seen(request, done: bool) -> None:
        if request.url.split("?")[0].endswith("/events"):
            return
        (busy.discard if done else busy.add)(request)
        last[0] = time.monotonic()

    handlers = {"request": lambda r: seen(r, False), "requestfinished": lambda r: seen(r, True),
                "requestfailed": lambda r: seen(r, True)}
    for name, fn in handlers.items():
        page.on(name, fn)
    t0 = time.monotonic()
    try:
        while busy or time.monotonic() - last[0] < quiet_s:
            if time.monotonic() - t0 > timeout:
                raise AssertionError(f"the page never went quiet within {timeout:.0f} s: "
                                     f"{[r.url[-60:] for r in busy][:5]}")
            page.wait_for_timeout(100)
    finally:
        for name, fn in handlers.items():
            page.remove_listener(name, fn)
    return time.monotonic() - t0


def open_app(page, app) -> None:
    """Open the demo data set on a clean slate: the App shares one Session per server, so a
    view or a panel left by an earlier test is cleared first (the server's session state reset,
    then in the page)."""
    app.reset_state()
    page.goto(app.dataset_url)
    page.locator(COUNT).first.wait_for(timeout=90_000)
    page.locator(CLEAR_VIEW).click()
    for _ in range(20):  # close panels an earlier test left open (their tab has a Close button)
        tabs = page.locator('[data-cy^="panel-tab-"]:not([data-cy="panel-tab-samples"]) button[title="Close"]')
        if not tabs.count():
            break
        tabs.first.click()
        page.wait_for_timeout(200)
    wait_for_count(page, lambda n: n == app.n_samples, what=f"== {app.n_samples} (full data set)")
    wait_for_tiles(page)


def leave_app(page, app) -> None:
    """Leave the App before deleting what a test wrote: the page goes blank and the server's shared
    session goes back to the whole data set (a view it still held would name the deleted fields)."""
    page.goto("about:blank")
    app.reset_state()


def open_operator_browser(page, query: str = "") -> str:
    """Press ` (the App's shortcut), type ``query``; returns the browser's text."""
    page.keyboard.press("`")
    page.locator(OPERATOR_BROWSER).wait_for(timeout=15_000)
    if query:
        page.locator(OPERATOR_SEARCH).fill(query)
        page.wait_for_timeout(300)
    return page.locator(OPERATOR_BROWSER).inner_text()


def open_panel(page, name: str):
    """Open a grid panel through the "+" menu; returns the locator to look for its charts in
    (the page: open_app closed every other panel, and the grid draws no plotly chart)."""
    page.locator(NEW_PANEL).first.click()
    page.locator(f'[data-cy="new-panel-option-{name}"]').click()
    page.locator(panel_tab(name)).wait_for(timeout=15_000)
    return page.locator("body")


# Clickable marks of every plotly chart under ``root``, in page coordinates, left to right:
# bars and scatter points from their DOM paths (d3 keeps the calc point in __data__), heatmap
# cells from the trace's axes. Each: {plot, trace, type, i, x, y, value, w, h} (value: bar
# size / heatmap z).
_MARKS_JS = r"""
(root) => {
  const out = [];
  const plots = Array.from(root.querySelectorAll('.js-plotly-plot'));
  plots.forEach((gd, plot) => {
    const box = gd.getBoundingClientRect();
    gd.querySelectorAll('.point').forEach((el) => {
      const r = el.getBoundingClientRect();
      if (r.width < 2 || r.height < 2) return;            // empty bar / hidden marker
      const d = el.__data__ || (el.parentNode && el.parentNode.__data__) || {};
      const trace = el.closest('.trace');
      const type = trace && trace.classList.contains('bars') ? 'bar' : 'scatter';
      out.push({plot, type, i: d.i, value: (type === 'bar' ? d.s : d.y),
                x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, h: r.height});
    });
    const fl = gd._fullLayout || {};
    (gd._fullData || []).forEach((tr, t) => {
      if (tr.type !== 'heatmap' || !tr.z) return;
      const xa = fl['xaxis' + (tr.xaxis || 'x').slice(1)], ya = fl['yaxis' + (tr.yaxis || 'y').slice(1)];
      if (!xa || !ya) return;
      tr.z.forEach((row, j) => row.forEach((z, i) => {
        if (z === null || z === undefined || Number.isNaN(z)) return;
        const xv = tr.x ? tr.x[i] : i, yv = tr.y ? tr.y[j] : j;
        const px = box.left + xa._offset + xa.c2p(xa.d2c(xv));
        const py = box.top + ya._offset + ya.c2p(ya.d2c(yv));
        out.push({plot, type: 'heatmap', i: [j, i], value: z, x: px, y: py, w: 0, h: 0,
                  diagonal: String(xv) === String(yv), xlabel: String(xv), ylabel: String(yv)});
      }));
    });
  });
  return out;
}
"""


def chart_marks(container) -> list[dict]:
    return container.evaluate(_MARKS_JS)


def wait_for_chart(container, timeout: float = 30.0) -> list[dict]:
    """Wait until a plotly chart in ``container`` has drawn marks; returns them."""
    container.locator(PLOT).first.wait_for(timeout=timeout * 1000)
    deadline = time.monotonic() + timeout
    while True:
        marks = chart_marks(container)
        if marks:
            return marks
        if time.monotonic() > deadline:
            raise AssertionError("plotly chart drew no bars, points or heatmap cells")
        container.page.wait_for_timeout(250)


def click_mark(page, mark: dict) -> None:
    """Hover, then click: plotly only emits a click for the point it is hovering."""
    page.mouse.move(mark["x"] - 3, mark["y"])
    page.mouse.move(mark["x"], mark["y"], steps=3)
    page.wait_for_timeout(150)
    page.mouse.click(mark["x"], mark["y"])


def click_until_count_changes(page, marks, n: int, timeout: float = 8, what: str = "marks") -> int | None:
    """Click ``marks`` (dicts, or callables returning a fresh mark) in turn until the grid's count
    differs from ``n``; the count it shows then. Fails naming every mark it clicked."""
    tried = []
    for mark in marks:
        mark = mark() if callable(mark) else mark
        click_mark(page, mark)
        tried.append({k: mark.get(k) for k in ("type", "i", "value", "xlabel", "ylabel") if k in mark})
        try:
            return wait_for_count(page, lambda c: c != n, timeout=timeout, what=f"!= {n}")
        except AssertionError:
            continue
    raise AssertionError(f"no click on the {what} changed the grid count from {n}; clicked {tried}")


# -- operator forms (the prompt dialog) and what they show ----------------------------------------------------

PROMPT = '[data-cy="operators-prompt-modal"]'           # an operator's form
OUTPUT = '[data-cy="operators-prompt-view-modal"]'      # progress bar, then the output card (or an error card)


def open_operator(page, query: str, title: str):
    """Open the operator browser, search ``query``, press Enter on the first hit; returns the
    form dialog once it shows ``title`` and its first field."""
    open_operator_browser(page, query)
    page.keyboard.press("Enter")
    form = page.locator(PROMPT)
    form.get_by_text(title).first.wait_for(timeout=30_000)
    form.locator("input").first.wait_for(timeout=30_000)
    return form


def form_field(form, label: str):
    """The form row of the input labelled ``label`` (its innermost grid item)."""
    return form.locator(".MuiGrid-item").filter(has=form.page.get_by_text(label, exact=True)).last


def clear_choices(form, label: str) -> None:
    """Remove every chosen value of the multi-select labelled ``label`` (a form may preselect some):
    Backspace in its empty input removes the last chip."""
    field = form_field(form, label)
    for _ in range(50):
        if not field.locator(".MuiChip-root").count():
            return
        field.locator("input").first.click()
        form.page.keyboard.press("Backspace")
        form.page.wait_for_timeout(150)
    raise AssertionError(f"could not clear the choices of {label!r}")


def pick_choices(form, label: str, values) -> None:
    """Choose exactly ``values`` in the multi-select labelled ``label`` as a user does: remove what
    the form preselected, open the list, click the option (shown as "<value> (<type>)")."""
    page = form.page
    clear_choices(form, label)
    for value in values:
        form_field(form, label).locator("input").first.click()
        page.get_by_role("option").filter(has_text=value).first.click()
        form_field(form, label).get_by_text(value).first.wait_for(timeout=15_000)


def fill_field(form, label: str, text: str, tries: int = 5) -> None:
    """Type ``text`` into the input labelled ``label`` and make sure it stays: a dynamic form
    re-resolves after each change (a radio click, an earlier field) and a re-render that lands
    meanwhile drops what was typed, so wait for the form to settle, then check and type again."""
    for _ in range(tries):
        settled_execute_button(form)
        box = form_field(form, label).locator("input").first
        box.fill(text)
        settled_execute_button(form)
        if form_field(form, label).locator("input").first.input_value() == text:
            return
    raise AssertionError(f"the field {label!r} kept losing {text!r} (form re-rendered {tries} times)")


def execute_button(form):
    return form.get_by_role("button", name="Execute", exact=True)


def settled_execute_button(form, timeout: float = 30.0):
    """The Execute button once the form is not resolving (a dynamic form re-resolves after each
    change and disables Execute meanwhile, with a spinner next to it)."""
    page = form.page
    page.wait_for_timeout(500)  # the change's debounce
    deadline = time.monotonic() + timeout
    while form.get_by_role("progressbar").count():
        if time.monotonic() > deadline:
            raise AssertionError(f"the form was still resolving after {timeout:.0f} s")
        page.wait_for_timeout(200)
    return execute_button(form)


# Every text the output dialog showed, in order (a progress bar at 100% is replaced by the result
# card within milliseconds: polling would miss it, a MutationObserver does not).
_WATCH_JS = r"""
(sel) => {
  window.__kalosDialog = [];
  const seen = () => {
    const el = document.querySelector(sel);
    const text = el ? el.innerText : null;
    const log = window.__kalosDialog;
    if (text && log[log.length - 1] !== text) log.push(text);
  };
  new MutationObserver(seen).observe(document.body, {subtree: true, childList: true, characterData: true});
}
"""


def watch_output_dialog(page) -> None:
    page.evaluate(_WATCH_JS, OUTPUT)


def output_dialog_history(page) -> list[str]:
    return page.evaluate("() => window.__kalosDialog || []")


def wait_for_text(locator, text: str, timeout: float = 60.0) -> str:
    """Wait until ``locator``'s text contains ``text``; returns the whole text."""
    deadline = time.monotonic() + timeout
    seen = ""
    while True:
        try:
            seen = locator.inner_text(timeout=1_000) if locator.count() else ""
        except Exception:  # re-rendering
            seen = ""
        if text in seen:
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} never shown within {timeout:.0f} s; last text: {seen[:1500]!r}")
        locator.page.wait_for_timeout(250)


def count_kept(ds, paths, keep) -> tuple[int, int, int]:
    """(items kept, samples holding one, all items) over the list fields ``paths`` of ``ds``
    (e.g. ``"careful.detections"``): the counts a panel click is checked against."""
    kept, samples, total = 0, set(), 0
    ids = ds.values("id")
    for path in paths:
        for sid, items in zip(ids, ds.values(path)):
            for item in items or []:
                total += 1
                if keep(item):
                    kept += 1
                    samples.add(sid)
    return kept, len(samples), total


def doc_screenshot(page, name: str) -> None:
    """KALOS_SCREENSHOTS=1: the page as docs/img/panels/<name>.png (no hover label, plotly settled)."""
    if os.environ.get("KALOS_SCREENSHOTS", "") not in ("", "0"):
        page.mouse.move(5, VIEWPORT["height"] - 5)
        page.wait_for_timeout(800)
        save_png(page.screenshot(), REPO / "docs" / "img" / "panels" / f"{name}.png")


def pick_after_label(page, label_text: str, option: str) -> None:
    """Pick ``option`` in the dropdown right after the text ``label_text`` (an MUI Select: role
    combobox, or a button with a listbox popup in older MUI)."""
    label = page.get_by_text(label_text, exact=True).first
    label.wait_for(state="attached", timeout=30_000)
    label.scroll_into_view_if_needed()
    select = label.locator("xpath=following::*[@role='combobox' or @aria-haspopup='listbox'][1]")
    select.scroll_into_view_if_needed()
    select.click()
    page.get_by_role("option", name=option, exact=True).click()


# Every drawn point / bar of one plotly chart with its trace's name and data coordinates (the
# trace's own x / y at the point's index), in page coordinates.
_POINTS_JS = r"""
(gd) => {
  const out = [];
  gd.querySelectorAll('.trace').forEach((tr) => {
    const cd = tr.__data__;
    const trace = cd && cd[0] && cd[0].trace;
    if (!trace) return;
    tr.querySelectorAll('.point').forEach((el) => {
      const r = el.getBoundingClientRect();
      const d = el.__data__ || {};
      if (r.width < 2 || r.height < 2 || d.i === undefined) return;
      out.push({name: trace.name, i: d.i, xv: trace.x ? String(trace.x[d.i]) : null,
                yv: trace.y ? String(trace.y[d.i]) : null, x: r.left + r.width / 2, y: r.top + r.height / 2});
    });
  });
  return out;
}
"""


def chart_points(page, index: int) -> list[dict]:
    """The points of the panel's ``index``-th chart, scrolled into view first."""
    plot = page.locator(PLOT).nth(index)
    plot.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    return plot.evaluate(_POINTS_JS)


def point(points: list[dict], name: str, **coords) -> dict:
    hits = [p for p in points if p["name"] == name and all(p[k] == v for k, v in coords.items())]
    assert hits, f"no point {name!r} {coords} among {[(p['name'], p['xv'], p['yv']) for p in points]}"
    return hits[0]


def selection_numbers(page, pattern: str, timeout: float = 60.0) -> tuple[int, ...]:
    """The integers of the panel's selection line once it matches ``pattern`` (a regex)."""
    text = ""
    for _ in range(int(timeout * 4)):
        text = page.locator("body").inner_text()
        m = re.search(pattern, text)
        if m:
            return tuple(int(g) for g in m.groups())
        page.wait_for_timeout(250)
    raise AssertionError(f"no selection line like {pattern!r} within {timeout:.0f} s; page text: {text[-1500:]!r}")
