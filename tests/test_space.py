"""The Space as it is deployed (issue 32): its folder as `make space` lays it out (app.py, the neuron_support package, the
Space's README and requirements), a fresh virtualenv holding only `space/requirements.txt` (no torch: the Space must not
need it), started as the Space starts it (`SPACE_ID` set, the dataset from `NEURON_SUPPORT_DATA`, the port from
`GRADIO_SERVER_PORT`). Then Debian's Chromium opens every kind of page over a folder holding a transformers pair with an
executed notebook and a diffusers pair whose runs left pictures (tests/test_app.py's builders): the lookup page, a model's
page, its executed notebook, a run's pictures and the compiler view's four tabs; each shows its content, no answer is a
5xx, nothing leaves 127.0.0.1, and the server's log holds no traceback.

The venv install reaches PyPI (pip's cache makes a rerun faster), so the Space's run is one test, run once. Beside it,
two quick ones: the Space's requirements are the `app` extra of pyproject.toml, and the app, serving every page in
the project's full environment, imports no library it does not show (torch, transformers, ...).
"""
import subprocess, sys, time, tomllib, urllib.parse, urllib.request
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from neuron_support.publish import notebook_path
from test_app import (ARGS, CHROMIUM, CPU_PAIR, DIFFUSERS_PAIR, DREW, ONE_MODEL, build_diffusers, cell, choose, folder_page,
                      free_port, natural_widths)

ROOT = Path(__file__).resolve().parents[1]
SPACE_ID = "aws-neuron/torch-neuronx-model-support"
NOTEBOOK = notebook_path(CPU_PAIR, ONE_MODEL)   # the executed notebook of ONE_MODEL's run, in the dataset
# the libraries the app must not import: the runs need them, the pages do not
NOT_SHOWN = ("torch", "transformers", "diffusers", "sentence_transformers", "timm", "accelerate", "ray", "papermill", "ipykernel")


def requirement_lines(path: Path) -> list:
    "The requirements of a requirements file, without comments and blank lines."
    return [line.split("#")[0].strip() for line in path.read_text().splitlines() if line.split("#")[0].strip()]


def test_the_spaces_requirements_are_the_apps_extra():
    "space/requirements.txt mirrors the `app` extra, and the project's own dependencies hold each of them (the full environment runs the app too)."
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    app = project["optional-dependencies"]["app"]
    assert requirement_lines(ROOT / "space" / "requirements.txt") == app
    names = {Requirement(r).name.lower().replace("_", "-") for r in project["dependencies"]}
    assert [r for r in app if Requirement(r).name.lower().replace("_", "-") not in names] == []


def dataset(folder: Path) -> Path:
    "A diffusers pair whose runs left pictures and a transformers pair (test_app's build_diffusers), ONE_MODEL's run with its executed notebook."
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
    build_diffusers(folder)
    path = folder / NOTEBOOK
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=[new_markdown_cell("# One run\n\nThe run of the model."),
                                       new_code_cell("print(outcome)", outputs=[new_output("stream", name="stdout", text="PASS\n")])]), path)
    return folder


def test_the_app_imports_no_library_it_does_not_show(tmp_path):
    "In the project's environment, where torch and the libraries are installed, serving every page imports none of them."
    data = dataset(tmp_path / "data")
    code = f"""
import sys, urllib.parse
from starlette.testclient import TestClient
from neuron_support.app import load_results
results = load_results({str(data)!r}, popularity=False)
http = TestClient(results.web_app())
pages = ["/", "/models?view=Downloads", "/model?id={ONE_MODEL}", "/notebook?" + urllib.parse.urlencode({{"path": "{NOTEBOOK}"}}),
         "/model?id={DREW[0]}", "/compiler/", "/compiler/?tab=charts"]
for page in pages: assert http.get(page).status_code == 200, page
results.charts(), results.failure_causes(), results.picture_grid(results.pictures_start())   # what the compiler view's tabs answer
print(" ".join(sorted({{m.split(".")[0] for m in sys.modules}})))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    loaded = set(p.stdout.split())
    assert {"nbconvert", "gradio", "matplotlib"} <= loaded   # the pages were served: the notebook's, the compiler view, its charts
    assert sorted(loaded & set(NOT_SHOWN)) == []


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    "The Space's folder and a fresh virtualenv holding only its requirements; (folder, python)."
    root = tmp_path_factory.mktemp("space")
    folder, venv = root / "space", root / "venv"
    subprocess.run(["make", "-s", "space", f"SPACE_DIR={folder}"], cwd=ROOT, check=True, timeout=120)
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "app.py", "neuron_support", "requirements.txt"]
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    p = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", folder / "requirements.txt"],
                       capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-3000:]
    found = subprocess.run([python, "-c", "import importlib.util as u; print([m for m in %r if u.find_spec(m)])" % (NOT_SHOWN,)],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert found == "[]", f"the Space's requirements installed {found}"
    return folder, python


def test_the_space_as_deployed_serves_every_page(space, tmp_path):
    pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists(): pytest.skip("needs Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    folder, python = space
    data, port = dataset(tmp_path / "data"), free_port()
    env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1",
           "SPACE_ID": SPACE_ID, "NEURON_SUPPORT_DATA": str(data), "GRADIO_SERVER_PORT": str(port)}
    log = tmp_path / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([python, "app.py"], cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    if r.status == 200: break
            except OSError:
                assert proc.poll() is None, f"the Space exited with {proc.returncode}: {log.read_text()[-3000:]}"
                assert time.monotonic() < deadline, "the Space did not answer within 180 s"
                time.sleep(0.5)
        assert f"serving http://0.0.0.0:{port}/" in log.read_text()   # a Space listens on every interface
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            pg = folder_page(browser, url)
            failed = []
            pg.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 500 else None)
            # the lookup page
            cell(pg, ONE_MODEL).wait_for(timeout=30_000)
            # a model's page, and its executed notebook
            pg.locator("#models-table a").get_by_text(ONE_MODEL, exact=True).click()
            pg.locator("#model-header").get_by_text(ONE_MODEL, exact=True).wait_for()
            with pg.expect_navigation() as opened:
                pg.locator("#model-header a", has_text="executed notebook").click()
            assert opened.value.status == 200, log.read_text()[-3000:]
            pg.locator("#notebook h1").get_by_text("One run").wait_for(timeout=10_000)
            assert "The run of the model." in pg.locator("#notebook").inner_text()
            # a diffusers run's pictures
            pg.goto(url + "model?" + urllib.parse.urlencode({"id": DREW[0]}))
            pg.locator("#model-header").get_by_text(DREW[0], exact=True).wait_for()
            assert natural_widths(pg, "#pictures img") == [64, 64]
            # the compiler view's tabs
            pg.goto(url + "compiler/")
            pg.locator("#diff-note").get_by_text("From and To are the same pair", exact=False).wait_for()
            pg.get_by_role("tab", name="Failure causes").click()
            pg.locator("#causes [role=gridcell]").get_by_text(DREW[1], exact=False).first.wait_for()
            pg.get_by_role("tab", name="Charts").click()
            for chart in ("#chart-results", "#chart-resources"):
                img = pg.locator(f"{chart} img").first
                img.wait_for()
                assert pg.evaluate("e => e.naturalWidth", img.element_handle()) > 300
            pg.get_by_role("tab", name="Pictures").click()
            assert pg.locator("#picture-pair input").input_value() == DIFFUSERS_PAIR
            assert pg.locator("#picture-grid figcaption").all_inner_texts() == [f"{DREW[0]} PASS", f"{DREW[1]} FAIL(output)"]
            assert natural_widths(pg, "#picture-grid img") == [64, 64]
            choose(pg, "#picture-pair", CPU_PAIR)   # a choice answered by the server, through Gradio's API
            pg.locator("#pictures-note").get_by_text("No run on", exact=False).wait_for()
            assert failed == [] and pg.outside == [] and pg.dialogs == []
            browser.close()
        assert proc.poll() is None, "the Space stopped"
    finally:
        proc.terminate()
        try: proc.wait(10)
        except subprocess.TimeoutExpired: proc.kill(); proc.wait()
    text = log.read_text()
    assert "Traceback" not in text and " 500 " not in text, text[-3000:]
