"""The lookup app in a real browser: Debian's Chromium driven by Playwright, against the app started as a child
process on 127.0.0.1, serving a dataset published to the local Hub and read back through hf://datasets/...
(and a second app over a local folder of one CPU pair, with an executed notebook: the notebook's page, and the
compiler view's sentence when there is nothing to compare; a third over a folder of two libraries' pairs, with a
model that both ran: the library filter, the model's rows side by side, no diff across libraries; and a fourth, over a
folder and over the same data on the local Hub, of a diffusers pair whose runs left their pictures: the model's page
shows them, the compiler view's Pictures tab shows them all, and `/files/` serves them and nothing outside `runs/`; and
two over real output, a sweep of the demo's three libraries and a lone `neuron-support run` into a fresh folder: the
first view lists every library's selection, and the lone run's model).

The dataset uses the local Hub's model ids (tests/conftest.py), so that the app's Downloads and Trending views are
ordered by the figures the same Hub serves, plus a model whose id, and notes and errors that hold HTML and a
script: they must show as text, and the script must never run.
"""
import json, os, re, shutil, socket, subprocess, sys, tempfile, time, urllib.error, urllib.parse, urllib.request
from urllib.parse import urlparse
from pathlib import Path

import pandas as pd
import pytest

from neuron_support.app import HOSTILE_NOTE, script_header
from neuron_support.registry import library_runners
from neuron_support.publish import demo_rows, empty_table, merge, synthetic_row, table_path, write_table

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
ORG = "neuron-support-test"
REPO = "neuron-support-test/app-dataset"
TOKEN = "hf_local_test_writer"  # the local Hub accepts any token for writes; a real one is never used here
DOCS = Path(__file__).resolve().parents[1] / "docs"
PAIRS = ["neuronxcc-2.20.1.0/transformers-5.23.0", "neuronxcc-2.21.2.0/transformers-5.24.0",
         "neuronxcc-2.22.0.0/transformers-5.24.0"]
EVIL = "evil/<script>window.__pwned=3</script>"
TASKS = {f"{ORG}/tiny-bert": "fill-mask", EVIL: "text-generation"}  # the others are text-generation on the Hub
# model -> result on each pair, oldest first
SWEEPS = {f"{ORG}/tiny-llama-a": ["FAIL(load)", "PASS", "PASS"], f"{ORG}/tiny-llama-b": ["PASS", "PASS", "FAIL(gen)"],
          f"{ORG}/tiny-llama-c": ["PASS", "PASS", "PASS"], f"{ORG}/tiny-llama-d": ["FAIL(gen)", "FAIL(gen)", "FAIL(gen)"],
          f"{ORG}/tiny-llama-e": ["PASS", "FAIL(output)", "PASS"], f"{ORG}/tiny-bert": ["PASS", "PASS", "FAIL(forward)"],
          f"{ORG}/too-large": ["EXCLUDED"] * 3, EVIL: ["PASS", "PASS", "FAIL(gen)"]}
CPU_FAILS_TOO = "IndexError: index out of range in self"  # tiny-bert's failure is its own: the CPU has it too
SELECTION = (f"{ORG}/tiny-llama-c", f"{ORG}/tiny-llama-a", EVIL, f"{ORG}/tiny-bert")

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (apt-get install chromium)")


def shot(name: str) -> str:
    """Where a browser test's screenshot goes: the README's docs/ when NEURON_SUPPORT_SCREENSHOTS=docs (`make screenshots`),
    else a folder of its own under the system's temporary folder, so that `make test` leaves the checkout as it found it."""
    folder = DOCS if os.environ.get("NEURON_SUPPORT_SCREENSHOTS") == "docs" else Path(tempfile.gettempdir()) / "neuron-support-screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_dataset(folder: Path) -> dict:
    "Three pairs of rows for the Hub's models; returns {(pair, model): row}."
    rows = {}
    for i, (pair, when) in enumerate(zip(PAIRS, ["2025-05-01T10:00:00Z", "2025-06-01T10:00:00Z", "2025-07-01T10:00:00Z"])):
        sweep = demo_rows(pair, when, {m: r[i] for m, r in SWEEPS.items()}, ranks=SELECTION)
        for r in sweep:
            r["task"] = TASKS.get(r["model_id"], "text-generation")
            if r["model_id"] == f"{ORG}/tiny-llama-a": r["notes"] = HOSTILE_NOTE
            if r["model_id"] == EVIL and r["result"] != "PASS": r["error"] = HOSTILE_NOTE
            if r["result"].startswith("FAIL") and r["result"] != "FAIL(output)":   # whose failure: the CPU's verdict
                r["cpu_eager"] = CPU_FAILS_TOO if r["model_id"] == f"{ORG}/tiny-bert" else "ok"
            rows[pair, r["model_id"]] = r
        write_table(merge(empty_table(), sweep), table_path(folder, pair))
    return rows


@pytest.fixture(scope="module")
def dataset(hub, tmp_path_factory):
    "The dataset's tables, uploaded to the local Hub as `publish` lays them out; the rows as written."
    folder = tmp_path_factory.mktemp("app-dataset")
    rows = build_dataset(folder)
    from huggingface_hub import HfApi
    api = HfApi(token=TOKEN)
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    api.upload_folder(folder_path=folder, repo_id=REPO, repo_type="dataset", allow_patterns=["data/**"])
    return rows


def serve(data: str, **env):
    "The app, a child process serving `data` on 127.0.0.1 (with `env` added to its environment); yields its address, and stops it."
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1", **env}
    code = f"from neuron_support.app import serve_app; serve_app({data!r}, port={port}, host='127.0.0.1')"
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url, deadline = f"http://127.0.0.1:{port}/", time.monotonic() + 180
    try:
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    if r.status == 200: break
            except OSError:
                if proc.poll() is not None: pytest.fail(f"the app exited with {proc.returncode}: {proc.stdout.read()}")
                if time.monotonic() > deadline: pytest.fail("the app did not answer within 180 s")
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try: proc.wait(10)
        except subprocess.TimeoutExpired: proc.kill(); proc.wait()


@pytest.fixture(scope="module")
def app_url(dataset, hub):
    "The app, a child process serving hf://datasets/REPO from the local Hub."
    yield from serve(f"hf://datasets/{REPO}")


CPU_PAIR = "cpu-aot_eager-torch2.13.0/transformers-5.24.0"
ONE_MODEL = f"{ORG}/tiny-llama-a"


@pytest.fixture(scope="module")
def folder_app_url(hub, tmp_path_factory):
    "The app over a local folder: one CPU pair, and the executed notebook of one model, hostile content included."
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
    folder = tmp_path_factory.mktemp("one-pair")
    rows = demo_rows(CPU_PAIR, "2025-07-01T10:00:00Z", {ONE_MODEL: "PASS", f"{ORG}/tiny-bert": "FAIL(gen)"}, ranks=(ONE_MODEL,))
    write_table(merge(empty_table(), rows), table_path(folder, CPU_PAIR))
    nb = new_notebook(cells=[new_markdown_cell("# One run\n\nThe run of the model. " + HOSTILE_NOTE),
                             new_code_cell("print(outcome)", outputs=[
                                 new_output("stream", name="stdout", text="PASS " + HOSTILE_NOTE),
                                 new_output("display_data", data={"text/html": HOSTILE_NOTE, "text/plain": "x"}),
                                 new_output("display_data", data={"application/javascript": "window.__pwned = 4"})])])
    path = folder / rows[0]["notebook"]
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    yield from serve(str(folder))


@pytest.fixture(scope="module")
def browser():
    sync = pytest.importorskip("playwright.sync_api")
    with sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def clean(pg):
    "No script from the data ran on this page: no dialog, no window.__pwned."
    assert pg.dialogs == [] and pg.evaluate("window.__pwned") is None, "a script from the data ran"


@pytest.fixture
def page(browser, app_url):
    "A fresh page on the app; records dialogs (an alert() would be a script that ran) and requests leaving 127.0.0.1."
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_url.rstrip("/"))
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    pg.dialogs, pg.outside = [], []
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    pg.on("request", lambda r: None if r.url.startswith(("http://127.0.0.1", "data:", "blob:")) else pg.outside.append(r.url))
    pg.goto(app_url)
    cell(pg, SELECTION[0]).wait_for(timeout=30_000)
    yield pg
    clean(pg)
    assert pg.outside == [], f"the page reached outside 127.0.0.1: {pg.outside}"
    ctx.close()


def column(pg, name: str, table: str = "#models-table") -> list:
    "The text of one column of one of the lookup page's HTML tables."
    return pg.evaluate("""([sel, name]) => {
        const t = document.querySelector(sel);
        const i = [...t.querySelectorAll('thead th')].map(h => h.innerText.trim()).indexOf(name);
        if (i < 0) throw new Error('no column ' + name);
        return [...t.querySelectorAll('tbody tr')].map(r => r.cells[i].innerText.trim());
    }""", [table, name])


def grid_column(pg, name: str, table: str) -> list:
    "The text of one column of a Gradio table (its rows are role=row divs, its cells role=gridcell)."
    return pg.evaluate("""([sel, name]) => {
        const t = document.querySelector(sel);
        const i = [...t.querySelectorAll('[role=columnheader]')].map(h => h.getAttribute('title')).indexOf(name);
        if (i < 0) throw new Error('no column ' + name);
        return [...t.querySelectorAll('[role=row].virtual-row')].map(r => r.querySelectorAll('[role=gridcell]')[i].innerText.trim());
    }""", [table, name])


def cell(pg, text: str, table: str = "#models-table"):
    "The cell of a lookup table that shows exactly `text`."
    return pg.locator(f"{table} td").get_by_text(text, exact=True)


def grid_cell(pg, text: str, table: str):
    "The cell of a Gradio table that shows exactly `text` (Gradio also keeps a hidden sizing copy of one row)."
    return pg.locator(f"{table} [role=gridcell]").get_by_text(text, exact=True)


def wait_count(pg, text: str):
    pg.wait_for_function("t => document.getElementById('count')?.innerText === t", arg=text, timeout=60_000)


def wait_column(pg, name: str, values: list):
    "Wait until a column of the models table reads `values`: when a count repeats, the count alone may be the previous answer's."
    pg.wait_for_function("""([name, want]) => {
        const t = document.querySelector('#models-table');
        const i = [...t.querySelectorAll('thead th')].map(h => h.innerText.trim()).indexOf(name);
        const got = [...t.querySelectorAll('tbody tr')].map(r => r.cells[i].innerText.trim());
        return JSON.stringify(got) === JSON.stringify(want);
    }""", arg=[name, values], timeout=60_000)


def test_main_view_shows_the_selection_in_rank_order(page):
    assert column(page, "model") == list(SELECTION)
    assert column(page, "rank") == ["1", "2", "3", "4"]
    assert column(page, "result") == ["PASS", "PASS", "FAIL(gen)", "FAIL(forward)"]
    assert set(column(page, "pair")) == {PAIRS[-1]}
    assert page.locator("#models p").first.inner_text() == "4 models: 2 PASS, 1 FAIL(gen), 1 FAIL(forward)"
    assert page.locator("#devices").inner_text() == "Rows from: neuron"   # the three pairs are neuronxcc ones
    page.screenshot(path=shot("app-main.png"), full_page=True)


def test_views_follow_the_hubs_downloads_and_trending(page):
    page.select_option("#view", "Downloads")
    wait_count(page, "8 models")
    # tiny-bert 1000 > a 500 > b 400 > c 300 > d 200 > e 100 > too-large 5; the evil id is not on the Hub: last
    assert column(page, "model") == [f"{ORG}/tiny-bert", f"{ORG}/tiny-llama-a", f"{ORG}/tiny-llama-b", f"{ORG}/tiny-llama-c",
                                     f"{ORG}/tiny-llama-d", f"{ORG}/tiny-llama-e", f"{ORG}/too-large", EVIL]
    assert column(page, "downloads")[:2] == ["1,000", "500"]
    page.select_option("#view", "Trending")
    page.wait_for_function("() => [...document.querySelectorAll('#models-table thead th')].some(h => h.innerText.trim() === 'trending')")
    assert column(page, "model")[:3] == [f"{ORG}/tiny-bert", f"{ORG}/tiny-llama-e", f"{ORG}/tiny-llama-d"]
    page.reload()   # the address keeps the view
    page.wait_for_function("() => [...document.querySelectorAll('#models-table thead th')].some(h => h.innerText.trim() === 'trending')")
    assert page.locator("#view").input_value() == "Trending"


def test_filters_narrow_the_view(page, dataset):
    page.select_option("#view", "Downloads")
    wait_count(page, "8 models")
    page.select_option("#task", "fill-mask")
    wait_count(page, "1 model")
    assert column(page, "model") == [f"{ORG}/tiny-bert"]
    page.select_option("#task", "all")
    page.select_option("#result", "FAIL(gen)")
    wait_count(page, "3 models")
    assert set(column(page, "result")) == {"FAIL(gen)"}
    page.select_option("#pair", PAIRS[0])
    wait_count(page, "1 model")
    assert column(page, "model") == [f"{ORG}/tiny-llama-d"] and column(page, "pair") == [PAIRS[0]]
    page.select_option("#result", "all")
    second = library_runners("transformers")[1]   # the runner of every fourth synthetic row (`demo_rows`)
    page.select_option("#runner", second)
    encoders = [m for (p, m), r in dataset.items() if p == PAIRS[0] and r["runner"] == second]
    wait_column(page, "model", sorted(encoders))   # one such model: the count is again "1 model"
    wait_count(page, f"{len(encoders)} model" + ("" if len(encoders) == 1 else "s"))
    assert column(page, "model") == sorted(encoders) and encoders


def test_the_form_works_without_script(browser, app_url):
    "With script off, the filters are a plain GET form: the Show button gives the same table."
    ctx = browser.new_context(java_script_enabled=False)
    pg = ctx.new_page()
    pg.goto(app_url)
    pg.select_option("#view", "Downloads")
    pg.select_option("#result", "PASS")
    pg.get_by_role("button", name="Show").click()
    pg.wait_for_url("**/?view=Downloads*")
    assert pg.locator("#count").inner_text() == "3 models"
    assert column(pg, "model") == [f"{ORG}/tiny-llama-a", f"{ORG}/tiny-llama-c", f"{ORG}/tiny-llama-e"]
    ctx.close()


def test_search_open_a_model_and_copy_its_script(page, dataset):
    model = f"{ORG}/tiny-llama-b"
    page.locator("#search").fill("LLAMA-B")
    wait_count(page, "0 models")   # the Selected view does not hold it ...
    page.select_option("#view", "Downloads")
    wait_count(page, "1 model")   # ... the Downloads view does
    page.locator("#models-table a").get_by_text(model, exact=True).click()
    header = page.locator("#model-header")
    header.get_by_text(model, exact=True).wait_for()
    assert "FAIL(gen)" in header.inner_text() and PAIRS[-1] in header.inner_text()
    assert column(page, "change", "#history") == ["", "", "stopped passing"]
    assert column(page, "result", "#history") == ["PASS", "PASS", "FAIL(gen)"]
    row = dataset[PAIRS[-1], model]
    assert page.locator("#error").text_content() == row["error"]
    link = page.locator("#model-header a", has_text="executed notebook")
    assert link.get_attribute("href").endswith(f"/datasets/{REPO}/blob/main/{row['notebook']}")
    assert page.locator("#model-header a", has_text="download .ipynb").get_attribute("href").endswith(
        f"/datasets/{REPO}/resolve/main/{row['notebook']}")
    # the Hub the data came from (the local one), not huggingface.co
    assert page.locator("#model-header a", has_text="model on the Hub").get_attribute("href") == f"{os.environ['HF_ENDPOINT']}/{model}"
    # run.py is folded to its header; Copy copies the whole script all the same
    assert page.locator("#run-py-header").inner_text() == script_header(row["run_py"]) != ""
    assert not page.locator("#run-py").is_visible() and page.locator("#run-py").text_content() == row["run_py"]
    page.locator("#copy").click()
    page.wait_for_function("t => navigator.clipboard.readText().then(c => c === t)", arg=row["run_py"], timeout=5_000)
    page.screenshot(path=shot("app-model.png"), full_page=True)
    page.locator("#run-py-fold summary").click()   # a click opens the whole script
    page.locator("#run-py").wait_for(state="visible")
    assert not page.locator("#run-py-header").is_visible()
    # an older pair's details: a PASS, so no error
    page.locator("#history a").get_by_text(PAIRS[0], exact=True).click()
    page.locator("#model-header code").get_by_text(PAIRS[0]).wait_for()
    assert page.locator("#error").count() == 0
    assert page.locator("#run-py").text_content() == dataset[PAIRS[0], model]["run_py"]


def test_a_result_pressed_after_typing_opens(page):
    "A press on a result takes the focus from the search box, which fires `change` again: the table must stay put."
    page.locator("#search").fill("llama-c")
    wait_count(page, "1 model")
    page.locator("#models-table a").get_by_text(f"{ORG}/tiny-llama-c", exact=True).hover()
    page.mouse.down(); page.wait_for_timeout(300); page.mouse.up()   # a person's press, not an instant one
    page.locator("#model-header").get_by_text(f"{ORG}/tiny-llama-c", exact=True).wait_for(timeout=60_000)


def test_a_model_opens_from_its_address(browser, app_url):
    pg = browser.new_page()
    pg.goto(app_url + f"?model={ORG}/tiny-llama-a")   # the older address leads to the model's page
    pg.locator("#model-header").get_by_text(f"{ORG}/tiny-llama-a", exact=True).wait_for(timeout=30_000)
    assert column(pg, "change", "#history") == ["", "started passing", ""]
    assert pg.goto(app_url + "model?id=nobody/nothing").status == 404
    assert pg.locator("#model-header").inner_text() == "No model nobody/nothing in the dataset."
    answer = pg.goto(app_url + "?view=Likes")
    assert answer.status == 400 and pg.locator("#bad-request").inner_text().startswith("unknown view 'Likes'")
    pg.close()


def test_html_and_scripts_in_the_data_stay_text(page, app_url):
    # a model id with a script, in the table
    page.locator("#search").fill("evil")
    wait_count(page, "1 model")
    evil = cell(page, EVIL)
    assert evil.count() == 1
    assert page.locator("#models-table script, #models-table img").count() == 0
    evil.click()
    page.locator("#model-header").get_by_text(EVIL, exact=True).wait_for()
    assert page.locator("main script, main img, #error b").count() == 0
    assert page.locator("#error").text_content() == HOSTILE_NOTE
    clean(page)
    # a note with a script and an onerror image: as text in the notes
    page.goto(app_url + f"model?id={ORG}/tiny-llama-a")
    page.locator("#model-header").get_by_text(f"{ORG}/tiny-llama-a", exact=True).wait_for()
    assert page.locator("#notes").text_content() == HOSTILE_NOTE
    assert page.locator("#notes b, #notes script, #notes img").count() == 0
    clean(page)
    # the compiler team's view quotes ids and errors too
    page.goto(app_url + "compiler/")
    grid_cell(page, EVIL, "#diff").wait_for()
    assert page.locator("#diff script, #diff img").count() == 0
    page.get_by_role("tab", name="Failure causes").click()
    page.locator("#causes [role=gridcell]").get_by_text(EVIL, exact=False).first.wait_for()
    assert page.locator("#causes script, #causes img").count() == 0
    page.wait_for_timeout(500)   # give any injected handler time to fire before the fixture checks window.__pwned


def test_regressions_and_charts(page, app_url):
    page.get_by_role("link", name="Regressions, failure causes and charts").click()
    grid_cell(page, f"{ORG}/tiny-llama-b", "#diff").wait_for()
    changes = dict(zip(grid_column(page, "model", "#diff"), grid_column(page, "change", "#diff")))
    assert changes == {f"{ORG}/tiny-llama-b": "regressed", f"{ORG}/tiny-bert": "regressed", EVIL: "regressed",
                       f"{ORG}/tiny-llama-e": "fixed"}
    assert grid_column(page, "result before", "#diff")[0] == "PASS" and grid_column(page, "failure cause after", "#diff")[0] != ""
    assert page.locator("#diff-note").inner_text().strip() == ""   # changes to show: no sentence
    # the compiler team's view: tiny-bert's new failure is the CPU's too (cpu_eager), so it is not theirs
    page.locator("#device-only input").check()
    grid_cell(page, f"{ORG}/tiny-bert", "#diff").wait_for(state="detached")
    assert set(grid_column(page, "model", "#diff")) == {f"{ORG}/tiny-llama-b", EVIL, f"{ORG}/tiny-llama-e"}
    assert set(grid_column(page, "CPU eagerly after", "#diff")) == {"ok", ""}
    page.locator("#device-only input").uncheck()
    grid_cell(page, f"{ORG}/tiny-bert", "#diff").wait_for()
    page.get_by_role("tab", name="Charts").click()
    for chart in ("#chart-results", "#chart-resources"):
        img = page.locator(f"{chart} img").first
        img.wait_for()
        assert page.evaluate("e => e.naturalWidth", img.element_handle()) > 300
    page.screenshot(path=shot("app-charts.png"), full_page=True)
    page.goto(app_url + "compiler/?tab=failures")   # a tab opens from its address, filled
    page.locator("#causes [role=gridcell]").get_by_text(f"{ORG}/tiny-llama-d", exact=False).first.wait_for()
    assert page.get_by_role("tab", name="Failure causes").get_attribute("aria-selected") == "true"
    # the newest rows fail for b, d, tiny-bert and the evil id: each counted once, under its cause
    assert sum(int(n) for n in grid_column(page, "models", "#causes")) == 4
    page.get_by_role("link", name="Models").click()   # and back, in the same tab
    cell(page, SELECTION[0]).wait_for()
    assert urlparse(page.url).path == "/"


def choose(pg, dropdown: str, option: str):
    "Choose an option of a Gradio dropdown, and wait until the dropdown shows it."
    pg.locator(f"{dropdown} input").click()
    pg.get_by_role("option", name=option, exact=True).click()
    pg.wait_for_function("([s, v]) => document.querySelector(s)?.value === v", arg=[f"{dropdown} input", option], timeout=30_000)


def folder_page(browser, url: str):
    "A page of the folder app, recording dialogs and requests that leave 127.0.0.1, as `page` does."
    pg = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    pg.set_default_timeout(60_000)   # a machine busy with the other tests' compiles can be slow to answer
    pg.dialogs, pg.outside = [], []
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    pg.on("request", lambda r: None if r.url.startswith(("http://127.0.0.1", "data:", "blob:")) else pg.outside.append(r.url))
    pg.goto(url)
    return pg


def test_one_pair_explains_the_empty_diff(browser, folder_app_url):
    pg = folder_page(browser, folder_app_url + "compiler/")
    note = pg.locator("#diff-note")
    note.get_by_text("A diff compares two pairs", exact=False).wait_for(timeout=30_000)
    assert "holds 1 pair so far" in note.inner_text() and "A pair is one compiler version with one library version" in note.inner_text()
    assert pg.locator("#devices").inner_text() == "Rows from: cpu (aot_eager)"
    clean(pg)
    assert pg.outside == []
    pg.context.close()


def test_the_executed_notebook_opens_as_a_page(browser, folder_app_url):
    pg = folder_page(browser, folder_app_url + "model?" + urllib.parse.urlencode({"id": ONE_MODEL}))
    pg.locator("#model-header").get_by_text(ONE_MODEL, exact=True).wait_for(timeout=30_000)
    assert pg.locator("#devices").inner_text() == "Rows from: cpu (aot_eager)"
    raw = pg.locator("#model-header a", has_text="download .ipynb").get_attribute("href")
    pg.locator("#model-header a", has_text="executed notebook").click()   # the app's own page, in the same tab
    pg.wait_for_url("**/notebook?path=*")
    pg.locator("#notebook h1").get_by_text("One run").wait_for()
    assert "The run of the model." in pg.locator("#notebook").inner_text()
    # the notebook's HTML is sanitized: its script, image and JavaScript output are gone or text
    assert pg.locator("#notebook script, #notebook img, #notebook [onerror]").count() == 0
    assert 'onerror="window.__pwned = 2"' in pg.locator("#notebook").inner_text()
    assert pg.locator("#notebook b").first.inner_text() == "bold?"
    assert pg.locator("#notebook-path a").get_attribute("href") == raw
    pg.wait_for_timeout(500)
    clean(pg)
    assert pg.outside == []
    with urllib.request.urlopen(folder_app_url.rstrip("/") + raw) as r:   # the file itself, to download
        assert "attachment" in r.headers["Content-Disposition"] and json.loads(r.read())["cells"][0]["cell_type"] == "markdown"
    pg.context.close()


def test_gradios_front_end_is_served_compressed_and_kept(app_url):
    "No browser: a script the compiler team's page names comes from GradioAssets, brotli-compressed and marked immutable."
    with urllib.request.urlopen(app_url + "compiler/") as r:
        script = re.search(r'src="\./(assets/index-[^"]+\.js)"', r.read().decode())[1]
    with urllib.request.urlopen(urllib.request.Request(app_url + "compiler/" + script, headers={"Accept-Encoding": "br"})) as r:
        assert r.headers["Content-Encoding"] == "br" and "immutable" in r.headers["Cache-Control"]


def test_a_dataset_read_through_hf_equals_the_tables_written(dataset, hub):
    "No browser: the frame the app holds is what was written, and a missing dataset repo is a one-line UsageError."
    from neuron_support.app import load_tables
    from neuron_support.stack import UsageError
    df = load_tables(f"hf://datasets/{REPO}")
    assert len(df) == len(dataset)
    got = {(p, m): r for p, m, r in zip(df.pair, df.model_id, df.result)}
    assert got == {k: r["result"] for k, r in dataset.items()}
    with pytest.raises(UsageError, match="no dataset"):
        load_tables(f"hf://datasets/{ORG}/no-such-dataset")


ST_PAIR = "cpu-aot_eager-torch2.13.0/sentence-transformers-6.0.1"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
NEAR_TIE = "~ near-tie " + HOSTILE_NOTE   # a cpu_match that carries HTML: it must show as text


def build_two_libraries(folder: Path) -> dict:
    "A transformers pair and a later sentence-transformers pair, both holding MINILM and one model of their own; {(pair, model): row}."
    sweeps = {CPU_PAIR: ("2025-06-01T10:00:00Z", {MINILM: ("PASS", "run_encoder"), ONE_MODEL: ("PASS", "run_dense")}),
              ST_PAIR: ("2025-07-01T10:00:00Z", {MINILM: ("FAIL(forward)", "run_sentence_embedding"),
                                                  f"{ORG}/tiny-st": ("PASS", "run_sentence_embedding")})}
    rows = {}
    for pair, (when, models) in sweeps.items():
        sweep = [synthetic_row(m, r, pair, when, runner=runner, selection_rank=i + 1) for i, (m, (r, runner)) in enumerate(models.items())]
        if pair == CPU_PAIR: sweep[0]["cpu_match"] = NEAR_TIE
        write_table(merge(empty_table(), sweep), table_path(folder, pair))
        rows |= {(pair, r["model_id"]): r for r in sweep}
    return rows


@pytest.fixture(scope="module")
def libraries_url(hub, tmp_path_factory):
    "The app over a local folder of two libraries' pairs."
    folder = tmp_path_factory.mktemp("two-libraries")
    build_two_libraries(folder)
    yield from serve(str(folder))


def test_the_library_filter_narrows_the_models(browser, libraries_url):
    pg = folder_page(browser, libraries_url + "?view=Downloads")
    wait_count(pg, "3 models")   # all: one row per model, MINILM's newest (sentence-transformers')
    assert pg.locator("#library option").all_inner_texts() == ["all", "sentence-transformers", "transformers"]
    assert dict(zip(column(pg, "model"), column(pg, "pair")))[MINILM] == ST_PAIR
    pg.select_option("#library", "transformers")
    wait_count(pg, "2 models")
    # MINILM's transformers row, though its newest row is sentence-transformers'
    assert sorted(zip(column(pg, "model"), column(pg, "result"), column(pg, "pair"))) == [
        (ONE_MODEL, "PASS", CPU_PAIR), (MINILM, "PASS", CPU_PAIR)]
    pg.select_option("#library", "sentence-transformers")
    wait_column(pg, "pair", [ST_PAIR, ST_PAIR])   # the count repeats: wait for the table
    assert sorted(zip(column(pg, "model"), column(pg, "result"))) == [(f"{ORG}/tiny-st", "PASS"), (MINILM, "FAIL(forward)")]
    assert "library=sentence-transformers" in pg.url
    pg.reload()   # the address keeps the filter
    wait_column(pg, "pair", [ST_PAIR, ST_PAIR])
    assert pg.locator("#library").input_value() == "sentence-transformers"
    pg.select_option("#library", "all")
    wait_count(pg, "3 models")
    assert sorted(column(pg, "model")) == sorted([ONE_MODEL, f"{ORG}/tiny-st", MINILM])
    # the Selected view: the newest pair's selection, or the chosen library's newest pair's
    pg.select_option("#view", "Selected")
    wait_column(pg, "model", [MINILM, f"{ORG}/tiny-st"])
    pg.select_option("#library", "transformers")
    wait_column(pg, "model", [MINILM, ONE_MODEL])
    assert column(pg, "rank") == ["1", "2"] and column(pg, "result") == ["PASS", "PASS"]
    clean(pg)
    assert pg.outside == []
    pg.context.close()
    # without script, the filter is part of the GET form
    ctx = browser.new_context(java_script_enabled=False)
    pg = ctx.new_page()
    pg.goto(libraries_url + "?view=Downloads")
    pg.select_option("#library", "transformers")
    pg.get_by_role("button", name="Show").click()
    pg.wait_for_url("**library=transformers*")
    assert pg.locator("#count").inner_text() == "2 models" and set(column(pg, "pair")) == {CPU_PAIR}
    ctx.close()


def test_a_models_page_shows_its_libraries_side_by_side(browser, libraries_url):
    pg = folder_page(browser, libraries_url + "model?" + urllib.parse.urlencode({"id": MINILM}))
    pg.locator("#model-header").get_by_text(MINILM, exact=True).wait_for(timeout=30_000)
    t = "#by-library"
    assert column(pg, "library", t) == ["sentence-transformers", "transformers"]
    assert column(pg, "version", t) == ["6.0.1", "5.24.0"]
    assert column(pg, "pair", t) == [ST_PAIR, CPU_PAIR]
    assert column(pg, "result", t) == ["FAIL(forward)", "PASS"]
    assert column(pg, "runner", t) == ["run_sentence_embedding", "run_encoder"]
    assert column(pg, "cpu_match", t) == ["", NEAR_TIE]   # HTML in the data, as text
    assert column(pg, "tested at", t) == ["2025-07-01 10:00", "2025-06-01 10:00"]
    assert pg.locator(f"{t} script, {t} img, {t} b").count() == 0
    assert column(pg, "change", "#history") == ["", ""]   # PASS with one library, FAIL with the other: not a change
    assert ST_PAIR in pg.locator("#model-header").inner_text()   # the header details the newest row
    pg.locator(f"{t} a").get_by_text(CPU_PAIR, exact=True).click()   # each library's row opens its page
    pg.locator("#model-header code").get_by_text(CPU_PAIR, exact=True).wait_for()
    assert "PASS" in pg.locator("#model-header").inner_text() and pg.locator("#check").text_content() == f"cpu_match: {NEAR_TIE}"
    pg.goto(libraries_url + "model?" + urllib.parse.urlencode({"id": ONE_MODEL}))   # one library: one row
    pg.locator("#model-header").get_by_text(ONE_MODEL, exact=True).wait_for()
    assert column(pg, "library", t) == ["transformers"] and column(pg, "pair", t) == [CPU_PAIR]
    pg.wait_for_timeout(500)
    clean(pg)
    assert pg.outside == []
    pg.context.close()


def test_no_diff_across_two_libraries(browser, libraries_url, tmp_path):
    "A diff of a transformers pair and a sentence-transformers pair would compare libraries: the note stands instead."
    from neuron_support.app import Results, load_tables
    build_two_libraries(tmp_path)
    results = Results(load_tables(str(tmp_path)))
    note = results.diff_note(CPU_PAIR, ST_PAIR)
    assert "The two pairs are of different libraries" in note and "a diff compares compiler versions within one library" in note
    table, sentence = results.regressions(CPU_PAIR, ST_PAIR)
    assert len(table) == 0 and sentence == note
    assert results.diff_start() == (ST_PAIR, ST_PAIR)   # no library has two pairs: nothing to compare at first
    # in the compiler view, the dropdowns offer both libraries' pairs: choosing across them shows the note, not a diff
    pg = folder_page(browser, libraries_url + "compiler/")
    pg.locator("#diff-note").get_by_text("From and To are the same pair", exact=False).wait_for(timeout=30_000)
    choose(pg, "#pair-a", CPU_PAIR)
    pg.locator("#diff-note").get_by_text("The two pairs are of different libraries", exact=False).wait_for(timeout=60_000)
    assert "sentence-transformers" in pg.locator("#diff-note").inner_text()
    assert pg.locator("#diff [role=gridcell]").get_by_text(MINILM, exact=True).count() == 0
    clean(pg)
    assert pg.outside == []
    pg.context.close()


DIFFUSERS_PAIR = "cpu-aot_eager-torch2.13.0/diffusers-0.42.1"
DIFFUSERS_REPO = "neuron-support-test/app-diffusers"
FOX = "'A red fox in the snow, watercolor', 2 steps, 64x64 px: PSNR 45.7 dB with fp32 (bf16 CPU 45.7 dB)"
# model -> result; tiny-flux failed before it drew, so its run left no picture
PAINTERS = {f"{ORG}/tiny-flux": "FAIL(gen)", f"{ORG}/tiny-sd": "PASS", f"{ORG}/tiny-sd-xl": "FAIL(output)"}
DREW = [m for m, r in PAINTERS.items() if r != "FAIL(gen)"]


def gradient(path: Path, blue: int):
    "A 64x64 colour gradient, saved as a run saves its picture."
    import numpy as np
    from PIL import Image
    y, x = np.mgrid[0:64, 0:64]
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.stack([x * 4, y * 4, np.full_like(x, blue)], -1).astype(np.uint8)).save(path)


def build_diffusers(folder: Path) -> dict:
    "A diffusers pair of text-to-image runs, those that drew with their two pictures, and a newer transformers pair; {model: row}."
    t2i = dict(runner="run_text_to_image", task="text-to-image")
    rows = [synthetic_row(m, r, DIFFUSERS_PAIR, "2025-06-01T10:00:00Z", selection_rank=i + 1, **t2i, **({"notes": FOX} if m in DREW else {}))
            for i, (m, r) in enumerate(PAINTERS.items())]
    write_table(merge(empty_table(), rows), table_path(folder, DIFFUSERS_PAIR))
    write_table(merge(empty_table(), [synthetic_row(ONE_MODEL, "PASS", CPU_PAIR, "2025-07-01T10:00:00Z", selection_rank=1)]),
                table_path(folder, CPU_PAIR))
    for i, r in enumerate(rows):
        if r["model_id"] in DREW:
            run = (folder / r["notebook"]).parent
            gradient(run / "image.png", 60 * i)
            gradient(run / "image_cpu.png", 60 * i + 30)
    return {r["model_id"]: r for r in rows}


@pytest.fixture(scope="module")
def diffusers_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("diffusers")
    build_diffusers(folder)
    return folder


@pytest.fixture(scope="module")
def diffusers_url(hub, diffusers_folder):
    "The app over the diffusers folder."
    yield from serve(str(diffusers_folder))


@pytest.fixture(scope="module")
def diffusers_hub_url(hub, diffusers_folder):
    "The app over the same dataset, uploaded to the local Hub (tables and pictures) and read through hf://datasets/..."
    from huggingface_hub import HfApi
    api = HfApi(token=TOKEN)
    api.create_repo(DIFFUSERS_REPO, repo_type="dataset", exist_ok=True)
    api.upload_folder(folder_path=diffusers_folder, repo_id=DIFFUSERS_REPO, repo_type="dataset", allow_patterns=["data/**", "runs/**"])
    yield from serve(f"hf://datasets/{DIFFUSERS_REPO}")


def natural_widths(pg, selector: str) -> list:
    "The natural width of each image the selector finds, once the browser has fetched and decoded it; 0 for one that did not load."
    return pg.evaluate("sel => Promise.all([...document.querySelectorAll(sel)].map(i => i.decode().then(() => i.naturalWidth, () => 0)))", selector)


def picture_page(pg, base: str, model: str):
    "A model's page of the diffusers dataset, once its header shows."
    pg.goto(base + "model?" + urllib.parse.urlencode({"id": model}))
    pg.locator("#model-header").get_by_text(model, exact=True).wait_for(timeout=30_000)


def test_a_text_to_image_run_shows_its_pictures(browser, diffusers_url):
    pg = folder_page(browser, diffusers_url + "model?" + urllib.parse.urlencode({"id": DREW[0]}))
    pg.locator("#model-header").get_by_text(DREW[0], exact=True).wait_for(timeout=30_000)
    run = f"runs/{DIFFUSERS_PAIR}/{DREW[0].replace('/', '--')}"
    assert pg.locator("#pictures img").evaluate_all("is => is.map(i => i.getAttribute('src'))") == [f"/files/{run}/image.png", f"/files/{run}/image_cpu.png"]
    assert pg.locator("#pictures figure figcaption").all_inner_texts() == ["cpu (aot_eager), bf16, compiled", "CPU fp32 reference"]
    assert natural_widths(pg, "#pictures img") == [64, 64]   # both fetched and decoded: real pictures, not broken ones
    assert pg.locator("#closeness").inner_text() == "PSNR 45.7 dB with fp32 (bf16 CPU 45.7 dB)"
    box = [pg.locator("#pictures img").nth(i).bounding_box() for i in (0, 1)]
    assert box[0]["y"] == box[1]["y"] and box[0]["x"] < box[1]["x"]   # side by side, the device's first
    pg.screenshot(path=shot("app-diffusers.png"), full_page=True)
    # a run that failed before it drew, and a model of another library: no pictures, and no image at all
    for model in (f"{ORG}/tiny-flux", ONE_MODEL):
        picture_page(pg, diffusers_url, model)
        assert pg.locator("#pictures").count() == 0 and pg.locator("img").count() == 0
    clean(pg)
    assert pg.outside == []
    pg.context.close()


def test_the_compiler_view_shows_a_diffusers_pairs_pictures(browser, diffusers_url, libraries_url):
    pg = folder_page(browser, diffusers_url + "compiler/?tab=pictures")
    grid = pg.locator("#picture-grid")
    grid.wait_for(timeout=30_000)
    assert pg.locator("#picture-pair input").input_value() == DIFFUSERS_PAIR   # the pair with pictures, though the transformers pair is newer
    assert "2 of 3 models run on" in pg.locator("#pictures-note").inner_text()
    assert grid.locator("figcaption").all_inner_texts() == [f"{DREW[0]} PASS", f"{DREW[1]} FAIL(output)"]
    assert natural_widths(pg, "#picture-grid img") == [64, 64]
    choose(pg, "#picture-pair", CPU_PAIR)   # another library's pair: why there is no grid
    pg.locator("#pictures-note").get_by_text("No run on", exact=False).wait_for(timeout=60_000)
    assert grid.count() == 0 and "(transformers) left a picture" in pg.locator("#pictures-note").inner_text()
    choose(pg, "#picture-pair", DIFFUSERS_PAIR)
    grid.locator("a", has_text=DREW[1]).click()   # each picture opens its model's page, on that pair
    pg.wait_for_url("**/model?id=*")
    pg.locator("#model-header code").get_by_text(DIFFUSERS_PAIR, exact=True).wait_for()
    assert natural_widths(pg, "#pictures img") == [64, 64]
    clean(pg)
    assert pg.outside == []
    pg.context.close()
    pg = folder_page(browser, libraries_url + "compiler/")   # a dataset without pictures: no Pictures tab
    pg.locator("#diff-note").wait_for(timeout=30_000)
    assert pg.get_by_role("tab", name="Regressions").count() == 1 and pg.get_by_role("tab", name="Pictures").count() == 0
    pg.context.close()


def test_files_serves_pictures_and_nothing_outside_runs(diffusers_url, diffusers_folder):
    "No browser: a picture comes as image/png, to show; nothing outside runs/ comes at all, by `..`, its encoding or a link."
    base, run = diffusers_url + "files/", f"runs/{DIFFUSERS_PAIR}/{DREW[0].replace('/', '--')}"
    with urllib.request.urlopen(base + run + "/image.png") as r:
        assert (r.headers["Content-Type"], r.headers["X-Content-Type-Options"]) == ("image/png", "nosniff")
        assert r.headers["Content-Disposition"].startswith("inline") and r.read() == (diffusers_folder / run / "image.png").read_bytes()
    link = diffusers_folder / "runs" / "data"
    link.symlink_to(diffusers_folder / "data")   # a link under runs/ that leads out of it
    try:
        for outside in [f"data/{DIFFUSERS_PAIR}.parquet", f"runs/../data/{DIFFUSERS_PAIR}.parquet", f"runs/%2e%2e/data/{DIFFUSERS_PAIR}.parquet",
                        f"runs/..%2fdata/{DIFFUSERS_PAIR}.parquet", f"runs/data/{DIFFUSERS_PAIR}.parquet", "%2fetc/passwd", "runs/../../../../../etc/passwd"]:
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(base + outside)
            assert e.value.code == 404, outside
    finally:
        link.unlink()


def test_a_hub_datasets_pictures_come_from_the_hub(browser, diffusers_hub_url, hub):
    pg = folder_page(browser, diffusers_hub_url + "model?" + urllib.parse.urlencode({"id": DREW[0]}))
    pg.locator("#model-header").get_by_text(DREW[0], exact=True).wait_for(timeout=30_000)
    run = f"runs/{DIFFUSERS_PAIR}/{DREW[0].replace('/', '--')}"
    endpoint = os.environ["HF_ENDPOINT"].rstrip("/")
    assert pg.locator("#pictures img").evaluate_all("is => is.map(i => i.getAttribute('src'))") == [
        f"{endpoint}/datasets/{DIFFUSERS_REPO}/resolve/main/{run}/{name}" for name in ("image.png", "image_cpu.png")]
    assert natural_widths(pg, "#pictures img") == [64, 64]
    picture_page(pg, diffusers_hub_url, f"{ORG}/tiny-flux")
    assert pg.locator("img").count() == 0
    clean(pg)
    assert pg.outside == []
    pg.context.close()


# The first view (issue 26, item 6): after a sweep of the demo's three libraries (the session's one, tests/conftest.py: a part
# of transformers' list, the whole of the others'), and after a lone run into a fresh folder.
DEMO = "neuron-support-demo"


def cli() -> str:
    "The neuron-support command of this environment."
    return str(Path(sys.executable).with_name("neuron-support"))


def first_view(folder: Path) -> list:
    """What the first view must list, from the tables: each library's newest selection by rank, then library; then the models
    of lone runs (the rows of pairs no sweep made). A swept pair's rows beyond its selection are not in it."""
    from neuron_support.app import load_tables
    df = load_tables(str(folder))
    ranked = df[df.selection_rank.notna()].sort_values(["selection_rank", "library", "model_id"])
    alone = df[~df.pair.isin(set(ranked.pair))]
    return list(ranked.model_id) + list(alone.sort_values(["library", "model_id"]).model_id)


@pytest.fixture(scope="module")
def demo_sweep(demo_sweep_of_libraries):
    "The output folder of the session's demo sweep of the three libraries (read only)."
    out, p = demo_sweep_of_libraries
    assert p.returncode == 0, p.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def demo_sweep_url(hub, demo_sweep):
    yield from serve(str(demo_sweep))


def test_the_first_view_lists_every_librarys_selection(browser, demo_sweep, demo_sweep_url):
    from conftest import DEMO_SWEEP_ONLY
    from neuron_support.app import load_tables
    df = load_tables(str(demo_sweep))
    assert sorted(df.library.unique()) == ["diffusers", "peft", "sentence-transformers", "timm", "transformers"]
    assert set(df.model_id) == {m for ids in DEMO_SWEEP_ONLY.values() for m in ids}
    # each row is its sweep's, ranked; but seven: transformers' list goes on past its selection (the text-generation and
    # image-text-to-text models, the vision-language ones among them) with the other tasks, and all-MiniLM-L6-v2 and the vision, audio and forecasting models are there, listed and run, not selected
    beyond = df[df.selection_rank.isna()]
    assert set(zip(beyond.library, beyond.model_id)) == {("transformers", m) for m in ("sentence-transformers/all-MiniLM-L6-v2", f"{DEMO}/tiny-vit",
                                                         f"{DEMO}/tiny-dinov2", f"{DEMO}/tiny-clip", f"{DEMO}/tiny-dpt-depth", f"{DEMO}/tiny-segformer-ade", f"{DEMO}/tiny-yolos", f"{DEMO}/tiny-vit-gpt2", f"{DEMO}/tiny-owlv2", f"{DEMO}/tiny-mask2former-ade", f"{DEMO}/tiny-whisper", f"{DEMO}/tiny-wav2vec2-ctc", f"{DEMO}/tiny-ast", f"{DEMO}/tiny-patchtst")}, beyond
    shown = df[df.selection_rank.notna()]
    assert df.pair.iloc[df.tested_at.argmax()].split("/")[1].startswith("peft")   # peft swept last: its pair is the newest
    pg = folder_page(browser, demo_sweep_url)
    wait_count(pg, "25 models")
    assert pg.locator("#view").input_value() == "Overview"
    assert column(pg, "model") == first_view(demo_sweep) and f"{DEMO}/tiny-llama" in column(pg, "model")
    assert pg.locator("#models p").first.inner_text() == "25 models: 16 PASS, 9 EXCLUDED"
    assert pg.locator("#view-note").inner_text() == ("Each library's newest selection, in rank order: diffusers 5, peft 4, sentence-transformers 5, timm 4, transformers 7. "
                                                     "Not shown here: 13 more models (every model's latest run).")   # the vision, audio and forecasting models; MiniLM shows by its sentence-transformers row
    # the library filter keeps that library's part of it, and the counts agree with the sentence's; the model beyond the
    # selection is named as left out (all-MiniLM-L6-v2 was in the unfiltered view, by its sentence-transformers row)
    pg.select_option("#library", "transformers")
    wait_column(pg, "model", [m for m in first_view(demo_sweep) if m in set(shown.model_id[shown.library == "transformers"])])
    assert pg.locator("#models p").first.inner_text() == "7 models: 3 PASS, 4 EXCLUDED"
    assert pg.locator("#view-note").inner_text() == ("Each library's newest selection, in rank order: transformers 7. "
                                                     "Not shown here: 14 more models (every model's latest run).")
    # Selected is still the newest selection alone: peft's, swept last
    pg.select_option("#library", "all")
    pg.select_option("#view", "Selected")
    wait_column(pg, "model", list(df[df.library == "peft"].sort_values(["selection_rank", "model_id"]).model_id))
    assert pg.locator("#view-note").count() == 0
    clean(pg)
    assert pg.outside == []
    pg.context.close()


@pytest.mark.parametrize("name", ["tiny-vit", "tiny-timm-vit"])
def test_an_image_classifiers_page_shows_its_photograph_and_both_rankings(browser, demo_sweep, demo_sweep_url, name):
    "A tiny ViT of the session's sweep, transformers' and timm's: its page shows the photograph it saw and the device's and the CPU's top five, with their probabilities."
    model = f"{DEMO}/{name}"
    pg = folder_page(browser, demo_sweep_url + "model?" + urllib.parse.urlencode({"id": model}))
    pg.locator("#model-header").get_by_text(model, exact=True).wait_for(timeout=30_000)
    notes = pg.locator("#notes").inner_text()
    device, cpu = notes.split(" | ")
    ranked = lambda text, who: re.fullmatch(who + r": (?:[^;]+ [01]\.\d\d; ){4}[^;]+ [01]\.\d\d", text)
    assert ranked(device, "top-5 on cpu") and ranked(cpu, "CPU fp32"), notes
    assert pg.locator("#check").inner_text().startswith("cpu_match: ")
    pair = df_pair(demo_sweep, model)
    assert pg.locator("#pictures img").evaluate_all("is => is.map(i => i.getAttribute('src'))") == [f"/files/runs/{pair}/{model.replace('/', '--')}/input.png"]
    assert pg.locator("#pictures figure figcaption").all_inner_texts() == ["the photograph it saw"]
    assert natural_widths(pg, "#pictures img") == [224]   # fetched and decoded: the photograph itself
    clean(pg)
    assert pg.outside == []
    pg.context.close()


@pytest.mark.parametrize("name, notes, width", [("tiny-dpt-depth", "depth on cpu: relative error ", 224), ("tiny-segformer-ade", "classes on cpu: ", 224),
                                                ("tiny-yolos", "boxes on cpu: ", 448), ("tiny-vit-gpt2", None, 448), ("tiny-owlv2", "boxes on cpu: ", 448),
                                                ("tiny-mask2former-ade", "classes on cpu: ", 224)])
def test_a_dense_vision_models_page_shows_both_maps_beside_the_photograph(browser, demo_sweep, demo_sweep_url, name, notes, width):
    """The tiny DPT, SegFormer, YOLOS, ViT-GPT2, OWLv2 and Mask2Former of the session's sweep: each page shows the map the device computed (the
    depths in grey, the classes as colours over the photograph, the kept boxes drawn on it, the caption written under it: these
    two at twice its size) beside the CPU's fp32 one, drawn alike, and the photograph it saw; the notes say how they compare
    (a captioner's: its caption, the row's)."""
    model = f"{DEMO}/{name}"
    pg = folder_page(browser, demo_sweep_url + "model?" + urllib.parse.urlencode({"id": model}))
    pg.locator("#model-header").get_by_text(model, exact=True).wait_for(timeout=30_000)
    from neuron_support.app import load_tables
    if notes is None: notes = load_tables(str(demo_sweep)).set_index("model_id").notes[model].rstrip("…")   # a caption: the row's own
    assert pg.locator("#notes").inner_text().startswith(notes), pg.locator("#notes").inner_text()
    run = f"/files/runs/{df_pair(demo_sweep, model)}/{model.replace('/', '--')}"
    assert pg.locator("#pictures img").evaluate_all("is => is.map(i => i.getAttribute('src'))") == [f"{run}/image.png", f"{run}/image_cpu.png", f"{run}/input.png"]
    assert pg.locator("#pictures figure figcaption").all_inner_texts() == ["cpu (aot_eager), bf16, compiled", "CPU fp32 reference", "the photograph it saw"]
    assert natural_widths(pg, "#pictures img") == [width, width, 224]   # fetched and decoded: the two maps (or drawings), and the photograph
    pg.locator("#pictures").screenshot(path=shot(f"app-{name.removeprefix('tiny-').removesuffix('-depth').removesuffix('-ade')}.png"))
    clean(pg)
    assert pg.outside == []
    pg.context.close()


def test_a_vision_language_models_page_shows_its_photograph(browser, demo_sweep, demo_sweep_url):
    "The tiny Qwen2.5-VL of the session's sweep: its page shows the photograph it saw beside its generated text."
    model = f"{DEMO}/tiny-qwen2.5-vl"
    pg = folder_page(browser, demo_sweep_url + "model?" + urllib.parse.urlencode({"id": model}))
    pg.locator("#model-header").get_by_text(model, exact=True).wait_for(timeout=30_000)
    assert pg.locator("#notes").inner_text().strip(), "the device's text"
    pair = df_pair(demo_sweep, model)
    assert pg.locator("#pictures img").evaluate_all("is => is.map(i => i.getAttribute('src'))") == [f"/files/runs/{pair}/{model.replace('/', '--')}/input.png"]
    assert pg.locator("#pictures figure figcaption").all_inner_texts() == ["the photograph it saw"]
    assert natural_widths(pg, "#pictures img") == [224]   # fetched and decoded: the photograph itself
    clean(pg)
    assert pg.outside == []
    pg.context.close()


def test_a_speech_models_page_shows_both_transcripts_and_plays_its_clip(browser, demo_sweep, demo_sweep_url):
    "The tiny Whisper of the session's sweep: its page shows the device's and the CPU's transcripts, the clip's waveform, and a player that loads the clip."
    model = f"{DEMO}/tiny-whisper"
    pg = folder_page(browser, demo_sweep_url + "model?" + urllib.parse.urlencode({"id": model}))
    pg.locator("#model-header").get_by_text(model, exact=True).wait_for(timeout=30_000)
    assert re.fullmatch(r'transcript on cpu: ".*" \| CPU fp32: ".*"', pg.locator("#notes").inner_text()), pg.locator("#notes").inner_text()
    folder = f"/files/runs/{df_pair(demo_sweep, model)}/{model.replace('/', '--')}"
    assert pg.locator("#pictures img").evaluate_all("is => is.map(i => i.getAttribute('src'))") == [f"{folder}/waveform.png"]
    assert pg.locator("#pictures figure figcaption").all_inner_texts() == ["the clip it heard"]
    assert pg.locator("#clip audio").get_attribute("src") == f"{folder}/input.wav"
    duration = pg.locator("#clip audio").evaluate("a => new Promise(done => a.readyState >= 1 ? done(a.duration) : (a.onloadedmetadata = () => done(a.duration), a.onerror = () => done(-1)))")
    assert abs(duration - 2.93) < 0.01, duration   # the browser fetched and read the clip itself
    clean(pg)
    assert pg.outside == []
    pg.context.close()


def test_a_forecasters_page_shows_its_forecasts_over_the_series(browser, demo_sweep, demo_sweep_url):
    "The tiny PatchTST of the session's sweep (issue 60): its page says how far the device's forecast is from the CPU's, and shows both drawn after the series."
    model = f"{DEMO}/tiny-patchtst"
    pg = folder_page(browser, demo_sweep_url + "model?" + urllib.parse.urlencode({"id": model}))
    pg.locator("#model-header").get_by_text(model, exact=True).wait_for(timeout=30_000)
    assert re.fullmatch(r"forecast on cpu: [0-9.]+ from CPU fp32's \(CPU bf16 [0-9.]+\), in units of the series' spread; 16 steps of 3 series",
                        pg.locator("#notes").inner_text()), pg.locator("#notes").inner_text()
    folder = f"/files/runs/{df_pair(demo_sweep, model)}/{model.replace('/', '--')}"
    assert pg.locator("#pictures img").evaluate_all("is => is.map(i => i.getAttribute('src'))") == [f"{folder}/forecast.png"]
    assert pg.locator("#pictures figure figcaption").all_inner_texts() == ["the series it read, then two forecasts: cpu (aot_eager) (thin) over the CPU's fp32 (wide)"]
    assert natural_widths(pg, "#pictures img") == [640]   # fetched and decoded: the picture itself
    assert pg.locator("#pictures img").evaluate("i => i.getBoundingClientRect().width") >= 560   # shown at a plot's width, not a photograph's 16em
    clean(pg)
    assert pg.outside == []
    pg.context.close()


def df_pair(folder, model:str)->str:
    "The pair of a model's newest row in a dataset folder."
    from neuron_support.app import load_tables
    df = load_tables(str(folder))
    return df[df.model_id == model].sort_values("tested_at").pair.iloc[-1]


@pytest.fixture(scope="module")
def lone_run(demo_hub, tmp_path_factory):
    "`neuron-support run neuron-support-demo/tiny-llama --out DIR` into a fresh folder, against the demo catalog's Hub."
    from neuron_support.hub import hub_env
    root = tmp_path_factory.mktemp("lone-run")
    p = subprocess.run([cli(), "run", f"{DEMO}/tiny-llama", "--out", str(root / "out"), "--device", "cpu", "--time-limit", "900"],
                       capture_output=True, text=True, timeout=1200, env={**os.environ, **hub_env(demo_hub, root / "hf")})
    assert p.returncode == 0, p.stderr[-3000:]
    return root / "out"


@pytest.fixture(scope="module")
def lone_run_url(hub, lone_run):
    yield from serve(str(lone_run))


def test_the_first_view_lists_a_lone_run(browser, lone_run, lone_run_url):
    from neuron_support.app import load_tables
    df = load_tables(str(lone_run))
    assert list(df.model_id) == [f"{DEMO}/tiny-llama"] and df.selection_rank.isna().all()   # a run outside a sweep: no selection
    pg = folder_page(browser, lone_run_url)
    wait_count(pg, "1 model")
    assert column(pg, "model") == [f"{DEMO}/tiny-llama"] and column(pg, "rank") == [""] and column(pg, "result") == list(df.result)
    assert pg.locator("#view-note").inner_text() == "No selection yet; the models run outside a sweep: transformers 1 run alone."
    pg.select_option("#view", "Selected")   # no sweep, no selection: said by the count
    wait_count(pg, "0 models")
    pg.select_option("#view", "Overview")
    cell(pg, f"{DEMO}/tiny-llama").click()
    pg.locator("#model-header").get_by_text(f"{DEMO}/tiny-llama", exact=True).wait_for()
    clean(pg)
    assert pg.outside == []
    pg.context.close()


# ---- the architecture table in the app: its view, a tested model's type, and a model no table holds ------------------------

@pytest.fixture(scope="module")
def architectures_folder(demo_sweep, damaged_architecture_table, tmp_path_factory):
    "The session's demo sweep's tables with the session's architecture table beside them (four of its rows run damaged): a dataset folder as `publish` lays it out."
    out, p = damaged_architecture_table
    assert p.returncode == 0, p.stderr[-3000:]
    folder = tmp_path_factory.mktemp("with-architectures")
    shutil.copytree(demo_sweep / "data", folder / "data")
    shutil.copytree(out / "architectures", folder / "architectures")
    return folder


@pytest.fixture(scope="module")
def architectures_url(architectures_folder, demo_hub):
    "The app over that folder, its Hub the demo catalog's: the Hub that knows the models no table holds."
    yield from serve(str(architectures_folder), HF_ENDPOINT=demo_hub)


def test_an_untested_models_page_answers_by_its_architecture(browser, architectures_folder, architectures_url):
    """A model the demo's Hub knows and no table holds (the tiny BERT masked LM): its page reads its config.json from the Hub
    and shows its architecture's row in the architecture table, and how many checkpoints of its model type were tested."""
    from neuron_support.app import load_tables
    df = load_tables(str(architectures_folder))
    model = f"{DEMO}/tiny-bert-mlm"
    assert model not in set(df.model_id)
    bert = df[(df.model_type == "bert") & (df.result != "EXCLUDED")]
    assert bert.model_id.nunique() >= 2   # the sweep's sentence-transformers models and MiniLM: BERTs, tested
    pg = folder_page(browser, architectures_url + "model?" + urllib.parse.urlencode({"id": model}))
    pg.locator("#untested-architecture").wait_for(timeout=30_000)
    assert pg.locator("#untested-architecture").inner_text() == ("Not tested on any pair. On the Hub, its config.json declares model type bert "
                                                                 "and class BertForMaskedLM.")
    assert column(pg, "class", "#untested-arch") == ["BertForMaskedLM"] and column(pg, "result", "#untested-arch") == ["PASS"]
    assert column(pg, "damage caught", "#untested-arch") == ["noise and swap"]   # and that its check fails a damaged BERT
    said = pg.locator("#untested-tested").inner_text()
    assert said.startswith(f"{bert.model_id.nunique()} tested checkpoints of this model type, {len(bert)} newest runs (one a library): "), said
    assert said.endswith(f"{len(bert)} PASS.") and (bert.result == "PASS").all(), said
    assert sorted(set(column(pg, "model", "#untested-models"))) == sorted(set(bert.model_id))
    pg.locator("#untested-models a").first.click()   # each opens its own page
    pg.locator("#model-header .model-id").wait_for()
    # an id the Hub does not know, and a gated one whose config the Hub keeps: a sentence each
    for missing, sentence in ((f"{DEMO}/no-such-model", f"does not know {DEMO}/no-such-model"), (f"{DEMO}/tiny-gated", "a gated model")):
        pg.goto(architectures_url + "model?" + urllib.parse.urlencode({"id": missing}))
        assert sentence in pg.locator("#untested-why").inner_text(), pg.locator("main").inner_text()
    clean(pg)
    assert pg.outside == []
    pg.context.close()


def test_the_architectures_view_and_a_tested_models_type(browser, architectures_url):
    pg = folder_page(browser, architectures_url)
    pg.get_by_role("link", name="Architectures").click()
    pg.locator("#architectures-table").wait_for(timeout=30_000)
    assert pg.locator("#arch-count").inner_text() == "17 architectures"
    types = column(pg, "model type", "#architectures-table")
    assert types == ["bert"] * 3 + ["blenderbot"] * 2 + ["dbrx", "deepseek_v3", "fnet", "gptj", "llama", "mamba", "maskformer", "mpt", "omdet-turbo", "owlv2", "t5", "zoedepth"]
    culprits, results = column(pg, "culprit", "#architectures-table"), column(pg, "result", "#architectures-table")
    # whose each failure is, in words: transformers' code, the settings; the tiny checkpoint's own failure is a SKIP that says so
    assert culprits[types.index("fnet")].startswith("fails everywhere in bf16: the CPU fails too, eagerly, and four times as wide as well (transformers' code): NotImplementedError"), culprits
    assert culprits[types.index("mpt")].startswith("the card's settings do not fit this architecture"), culprits
    assert results[types.index("gptj")] == "SKIP" and culprits[types.index("gptj")].startswith("the tiny checkpoint's own failure"), culprits
    caught = dict(zip(zip(types, column(pg, "class", "#architectures-table")), column(pg, "damage caught", "#architectures-table")))   # each row run damaged: its check shown to fail on its damaged checkpoint
    assert caught == {**dict.fromkeys(caught, ""), ("bert", "BertForMaskedLM"): "noise and swap", ("mamba", "MambaForCausalLM"): "noise and swap",
                      ("maskformer", "MaskFormerForInstanceSegmentation"): "swap; not noise: PASS Y"}, caught   # the damage it missed, said; rows not run damaged, nothing
    assert culprits[types.index("dbrx")].startswith("transformers' own defaults do not make it (DbrxConfig(): AttributeError: ") and results[types.index("dbrx")] == "SKIP"   # why it was not built
    pg.select_option("#result", "FAIL(gen)")
    pg.get_by_role("button", name="Show").click()
    pg.wait_for_url(re.compile(r"result=FAIL%28gen%29"))
    assert column(pg, "class", "#architectures-table") == ["MptForCausalLM"]
    # a tested model's page shows its model type's rows
    pg.goto(architectures_url + "model?" + urllib.parse.urlencode({"id": f"{DEMO}/tiny-llama"}))
    assert column(pg, "class", "#model-architecture") == ["LlamaForCausalLM"] and column(pg, "result", "#model-architecture") == ["PASS"]
    clean(pg)
    assert pg.outside == []
    pg.context.close()


@pytest.fixture(scope="module")
def adapter_hub(tmp_path_factory):
    """A local Hub of three adapters no table holds, each an adapter_config.json: a LoRA and a LoHa over the demo's tiny Llama
    (whose config.json it serves too), and a LoRA whose base is a folder of its trainer's machine."""
    from neuron_support.demo import build_demo
    from neuron_support.hub import hub_server
    root = tmp_path_factory.mktemp("adapter-hub")
    adapters = {"llama-lora": {"peft_type": "LORA", "base_model_name_or_path": f"{DEMO}/tiny-llama", "task_type": "CAUSAL_LM", "r": 8},
                "llama-loha": {"peft_type": "LOHA", "base_model_name_or_path": f"{DEMO}/tiny-llama", "task_type": "CAUSAL_LM"},
                "lost-lora": {"peft_type": "LORA", "base_model_name_or_path": "/home/trainer/llama"}}
    for name, config in adapters.items():
        (root / "models" / "acme" / name).mkdir(parents=True)
        (root / "models" / "acme" / name / "adapter_config.json").write_text(json.dumps(config))
    (root / "models" / DEMO / "tiny-llama").mkdir(parents=True)
    shutil.copy(build_demo() / "models" / DEMO / "tiny-llama" / "config.json", root / "models" / DEMO / "tiny-llama")
    (root / "catalog.json").write_text(json.dumps({"models": [*({"id": f"acme/{n}"} for n in adapters), {"id": f"{DEMO}/tiny-llama"}]}))
    with hub_server(root) as endpoint: yield endpoint


@pytest.fixture(scope="module")
def adapters_folder(architectures_folder, adapter_architecture_table, tmp_path_factory):
    "That dataset folder with peft's architecture table beside transformers' (a LoRA over the tiny Llama, MPT, Mamba and DBRX)."
    out, p = adapter_architecture_table
    assert p.returncode == 0, p.stderr[-3000:]
    folder = shutil.copytree(architectures_folder, tmp_path_factory.mktemp("with-adapters") / "dataset")
    for table in (out / "architectures").glob("*/peft-*.parquet"):
        shutil.copy(table, folder / "architectures" / table.parent.name / table.name)
    return folder


@pytest.fixture(scope="module")
def adapters_url(adapters_folder, adapter_hub):
    "The app over the demo sweep's tables (its adapters and the tiny Llama among them) and both architecture tables, its Hub the one above."
    yield from serve(str(adapters_folder), HF_ENDPOINT=adapter_hub)


def test_an_untested_adapters_page_names_its_base_and_what_is_known(browser, adapters_folder, adapters_url):
    """An adapter no table holds: its page reads its adapter_config.json from the Hub, names its base and the base's result
    in each library, the architecture table's row of the base's type, how the tested adapters of its type over that type
    fared, and the command that would test it; an adapter of a type never tested over it says so; one whose base is a
    folder, says that."""
    from neuron_support.app import load_tables
    df = load_tables(str(adapters_folder))
    loras = df[(df.library == "peft") & (df.model_type == "llama") & (df.result != "EXCLUDED")]
    assert len(loras) == 2 and "acme/llama-lora" not in set(df.model_id)   # the Qwen2.5-VL LoRA is not over llama
    pg = folder_page(browser, adapters_url + "model?" + urllib.parse.urlencode({"id": "acme/llama-lora"}))
    pg.locator("#untested-adapter").wait_for(timeout=30_000)
    assert pg.locator("#untested-adapter").inner_text() == ("Not tested on any pair. On the Hub, its adapter_config.json declares a LORA adapter "
                                                            f"(peft) over {DEMO}/tiny-llama.")
    base = df[df.model_id == f"{DEMO}/tiny-llama"]
    assert column(pg, "library", "#adapter-base-rows") == sorted(base.library) and column(pg, "result", "#adapter-base-rows") == ["PASS"]
    assert column(pg, "class", "#adapter-arch") == ["LlamaForCausalLM"] and column(pg, "result", "#adapter-arch") == ["PASS"]
    # peft's architecture table: a tiny LoRA over the same class, which passes, and whose damaged LoRA the check caught
    assert pg.locator("#adapter-lora").inner_text().startswith("The adapters' architecture table's rows of llama, on ") and "this adapter is" not in pg.locator("#adapter-lora").inner_text()
    assert column(pg, "class", "#adapter-lora-rows") == ["LlamaForCausalLM"] and column(pg, "result", "#adapter-lora-rows") == ["PASS"]
    assert column(pg, "runner", "#adapter-lora-rows") == ["run_adapter"] and column(pg, "runner", "#adapter-arch") == ["run_dense"]
    assert column(pg, "damage caught", "#adapter-lora-rows") == ["noise and swap"]
    assert pg.locator("#adapter-same").inner_text() == "2 tested LORA adapters over this model type: 2 PASS."
    assert sorted(column(pg, "model", "#adapter-same-models")) == sorted(loras.model_id)
    assert pg.locator("#adapter-command").inner_text() == "The command that tests it: neuron-support run acme/llama-lora --library peft"
    pg.locator("#adapter-base-rows a").first.click()   # the base's row opens its page
    pg.locator("#model-header .model-id").wait_for()
    pg.goto(adapters_url + "model?" + urllib.parse.urlencode({"id": "acme/llama-loha"}))
    assert pg.locator("#adapter-same").inner_text() == "No LOHA adapter over this model type has been tested."
    assert "(this adapter is a LOHA; the table's adapters are LoRAs)" in pg.locator("#adapter-lora").inner_text()
    # a tested adapter's page: its model type's row in peft's architecture table, not transformers'
    pg.goto(adapters_url + "model?" + urllib.parse.urlencode({"id": f"{DEMO}/tiny-llama-lora"}))
    assert column(pg, "class", "#model-architecture") == ["LlamaForCausalLM"] and column(pg, "runner", "#model-architecture") == ["run_adapter"]
    assert "with a tiny rank-8 LoRA over it" in pg.locator("main").inner_text()
    pg.goto(adapters_url + "model?" + urllib.parse.urlencode({"id": "acme/lost-lora"}))
    assert "names no base model by Hub id (ORG/NAME)" in pg.locator("#untested-why").inner_text(), pg.locator("main").inner_text()
    clean(pg)
    assert pg.outside == []
    pg.context.close()


@pytest.fixture(scope="module")
def timm_hub(tmp_path_factory):
    "A local Hub of three timm checkpoints' config.json: a ResNet-50 (a member of the resnet family, not its smallest), an architecture no family has, and one whose name is markup."
    from neuron_support.hub import hub_server
    root = tmp_path_factory.mktemp("timm-hub")
    configs = {"resnet50": {"architecture": "resnet50", "num_classes": 1000, "pretrained_cfg": {"input_size": [3, 224, 224]}},
               "unknown": {"architecture": "no_such_net", "num_classes": 10}, "markup": {"architecture": "<b id=injected>resnet50</b>"}}
    for name, config in configs.items():
        (root / "models" / "timm" / name).mkdir(parents=True)
        (root / "models" / "timm" / name / "config.json").write_text(json.dumps(config))
    (root / "catalog.json").write_text(json.dumps({"models": [{"id": f"timm/{n}"} for n in configs]}))
    with hub_server(root) as endpoint: yield endpoint


@pytest.fixture(scope="module")
def timm_architectures_url(demo_sweep, architecture_table, timm_architecture_table, timm_hub, tmp_path_factory):
    "The app over the session's demo sweep (its timm models among them) and both libraries' architecture tables (the session's transformers table, timm's ResNet family), its Hub the one above."
    folder = tmp_path_factory.mktemp("two-architecture-tables")
    shutil.copytree(demo_sweep / "data", folder / "data")
    for out, p in (architecture_table, timm_architecture_table):
        assert p.returncode == 0, p.stderr[-3000:]
        shutil.copytree(out / "architectures", folder / "architectures", dirs_exist_ok=True)
    yield from serve(str(folder), HF_ENDPOINT=timm_hub)


def test_an_untested_timm_models_page_answers_by_its_family(browser, timm_architectures_url):
    """A timm checkpoint no table holds: its config.json names an `architecture` and no model type; the page finds the row of
    its family by the row's members (timm's table has a row per family, its smallest model), and says which. An architecture
    no family has, and one whose name is markup, are a sentence each. The Architectures page's library menu shows one
    library's tables."""
    pg = folder_page(browser, timm_architectures_url + "model?" + urllib.parse.urlencode({"id": "timm/resnet50"}))
    pg.locator("#untested-architecture").wait_for(timeout=30_000)
    assert pg.locator("#untested-architecture").inner_text() == ("Not tested on any pair. On the Hub, its config.json declares the architecture resnet50, "
                                                                 "of the family resnet (its architecture table's row answers for each member).")
    assert column(pg, "class", "#untested-arch") == ["test_resnet"] and column(pg, "result", "#untested-arch") == ["PASS"]
    assert "The family's smallest architecture, as a random checkpoint at the library's own size, on" in pg.locator("#untested").inner_text()
    assert pg.locator("#untested-tested").inner_text() == "1 tested checkpoint of this model type: 1 PASS."   # the demo's tiny timm ResNet
    assert column(pg, "model", "#untested-models") == [f"{DEMO}/tiny-timm-resnet"]
    for name, sentence in (("unknown", "no family of the architecture tables has no_such_net"), ("markup", "no family of the architecture tables has <b id=injected>")):
        pg.goto(timm_architectures_url + "model?" + urllib.parse.urlencode({"id": f"timm/{name}"}))
        assert sentence in pg.locator("#untested-why").inner_text(), pg.locator("main").inner_text()
        assert pg.locator("#injected").count() == 0
    pg.goto(timm_architectures_url + "architectures")
    assert pg.locator("#library option").all_inner_texts() == ["all", "timm", "transformers"]
    pg.select_option("#library", "timm")
    pg.get_by_role("button", name="Show").click()
    pg.wait_for_url(re.compile(r"library=timm"))
    assert column(pg, "model type", "#architectures-table") == ["resnet"] and pg.locator("#arch-count").inner_text() == "1 architecture"
    pg.select_option("#library", "transformers")
    pg.get_by_role("button", name="Show").click()
    pg.wait_for_url(re.compile(r"library=transformers"))
    assert "resnet" not in column(pg, "model type", "#architectures-table") and pg.locator("#arch-count").inner_text() == "17 architectures"
    clean(pg)
    assert pg.outside == []
    pg.context.close()


def test_a_models_config_is_read_in_one_short_request_and_a_huge_one_refused(tmp_path):
    """hub_config against a real local Hub: a config it reads, a model the Hub does not know, and a config.json of 2 MB
    (a hostile upload) read no further than its first MiB: a sentence, not a page that waits or fills the memory."""
    from neuron_support.hub import hub_server
    for name, config in (("huge", {"model_type": "llama", "pad": "x" * 2_000_000}), ("fine", {"model_type": "bert", "architectures": ["BertForMaskedLM"]})):
        (tmp_path / "models" / "evil" / name).mkdir(parents=True)
        (tmp_path / "models" / "evil" / name / "config.json").write_text(json.dumps(config))
    (tmp_path / "catalog.json").write_text(json.dumps({"models": [{"id": "evil/huge"}, {"id": "evil/fine"}]}))
    code = ("import json; from neuron_support.app import hub_config, declared\n"
            "print(json.dumps([hub_config(m)[1] or declared(hub_config(m)[0]) for m in ('evil/huge', 'evil/fine', 'evil/none')]))")
    with hub_server(tmp_path) as endpoint:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, "HF_ENDPOINT": endpoint})
    assert p.returncode == 0, p.stderr[-2000:]
    huge, fine, none = json.loads(p.stdout.strip().splitlines()[-1])
    assert huge == "its config.json on the Hub is not a JSON object of at most 1024 KiB"
    assert fine == ["bert", "BertForMaskedLM"] and none == f"the Hub ({endpoint}) does not know evil/none"
