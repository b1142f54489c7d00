"""How fast the lookup app answers, on a synthetic dataset of 50,000 rows over many pairs.

    python benchmarks/app_lookup.py [--pairs 50] [--models 1000] [--browser]

1. Writes the dataset (one parquet file per pair, `publish`'s layout and schema) under a temporary folder.
2. In-process, what the server runs for each request: loading the tables once, then the lookup page of a view
   with filters and a search, model pages (both rendered to HTML), a diff between two pairs and the failure causes;
   median, 95th percentile and max in ms.
3. With --browser: starts the app (`serve_app`) as a child process on 127.0.0.1, opens it in Debian's Chromium
   (Playwright) and measures the time from navigation to the first table row on screen ("usable"), for the lookup
   page and for the compiler team's Gradio page (`/compiler/`, its first regression row), and from typing a search
   to the table's answer. In the same run, turn about, it opens the floor: an empty Gradio page (one Markdown, one
   10-row Dataframe, plain `launch`), so that a busy machine's figures can be read as a ratio. It also counts each
   first visit's requests and the bytes they carried.
"""
import argparse, os, socket, subprocess, sys, tempfile, time, urllib.request
from pathlib import Path

import numpy as np

from neuron_support.app import ALL, LATEST, RESULTS, Results, load_tables
from neuron_support.publish import frame, synthetic_row, table_path, write_table

TASKS = ["text-generation", "image-text-to-text", "fill-mask", "text-classification", "translation", "feature-extraction"]
RUNNERS = ["run_dense", "run_multimodal", "run_encoder", "run_encoder", "run_seq2seq", "run_encoder"]


def build(folder: Path, n_pairs: int, n_models: int, seed: int = 0) -> int:
    "n_pairs tables of n_models rows each, over a pool of 2 * n_models model ids; returns the row count."
    rng = np.random.default_rng(seed)
    pool = [f"org{i % 97}/model-{i:05d}" for i in range(2 * n_models)]
    weights = np.array([0.55, 0.08, 0.12, 0.05, 0.06, 0.04, 0.10])  # PASS, the FAIL classes, EXCLUDED
    for p in range(n_pairs):
        pair = f"neuronxcc-2.{p // 10 + 10}.{p % 10}.0/transformers-5.{p % 7 + 20}.0"
        when = f"2025-{1 + p // 28:02d}-{1 + p % 28:02d}T10:00:00Z"
        ids = rng.choice(len(pool), n_models, replace=False)
        res = rng.choice(len(RESULTS), n_models, p=weights)
        rows = []
        for rank, (i, r) in enumerate(zip(ids, res)):
            t = i % len(TASKS)
            extra = {} if list(RESULTS)[r] == "EXCLUDED" else dict(runner=RUNNERS[t], neuron_cores=int(2 ** (i % 5)),
                                                              hbm_peak_gb=float(i % 40), hbm_capacity_gb=24.0 * 2 ** (i % 5))
            rows.append(synthetic_row(pool[i], list(RESULTS)[r], pair, when, task=TASKS[t],
                                      selection_rank=rank + 1 if rank < 100 else None, **extra))
        write_table(frame(rows), table_path(folder, pair))
    return n_pairs * n_models


def timed(fn, *args) -> float:
    t = time.perf_counter(); fn(*args); return (time.perf_counter() - t) * 1000


def stats(ms: list) -> str:
    a = np.array(ms)
    return f"median {np.median(a):6.1f} ms   p95 {np.percentile(a, 95):6.1f} ms   max {a.max():6.1f} ms   (n={len(a)})"


def in_process(folder: Path, seed: int = 1) -> Results:
    rng = np.random.default_rng(seed)
    t = time.perf_counter(); df = load_tables(folder); load = time.perf_counter() - t
    t = time.perf_counter(); results = Results(df, source=str(folder)); index = time.perf_counter() - t
    print(f"rows {len(df):,}, pairs {len(results.pairs)}, models {len(results.by_model):,}")
    print(f"load tables once: {load:.2f} s; build indexes: {index:.2f} s")
    models = list(results.by_model)
    views = []
    for _ in range(200):
        v = rng.choice(["Selected", "Downloads", "Trending"])
        args = (v, rng.choice([ALL, *results.tasks]), rng.choice([ALL, *results.runners]), rng.choice([ALL, *RESULTS]),
                rng.choice([LATEST, *results.pairs]), rng.choice(["", "model-0", "ORG1", models[rng.integers(len(models))][-5:]]))
        views.append(timed(results.models_page, *args))
    pages = [timed(results.model_page, models[rng.integers(len(models))]) for _ in range(200)]
    diffs = [timed(results.pair_diff, *rng.choice(results.pairs, 2, replace=False)) for _ in range(20)]
    causes = [timed(results.failure_causes, rng.choice([LATEST, *results.pairs])) for _ in range(20)]
    print(f"lookup page (view + filters + search): {stats(views)}")
    print(f"model page:                            {stats(pages)}")
    print(f"diff of two pairs:       {stats(diffs)}   (first time; then cached)")
    print(f"failure causes:          {stats(causes)}")
    return results


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


FLOOR = """import sys, pandas as pd, gradio as gr
with gr.Blocks(analytics_enabled=False) as app:
    gr.Markdown("# floor")
    gr.Dataframe(pd.DataFrame({"model": [f"m{i}" for i in range(10)], "x": [str(i) for i in range(10)]}), interactive=False, elem_id="models-table")
app.launch(server_name="127.0.0.1", server_port=int(sys.argv[1]), ssr_mode=False, mcp_server=False, quiet=True, footer_links=[])
"""
ROW = "#models-table tbody tr"   # the lookup page's first table row
GRID_ROW = "[role=row].virtual-row"   # a Gradio table's


def start(code: str, *args) -> tuple:
    "A child process serving a page; its URL once it answers."
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"}
    proc = subprocess.Popen([sys.executable, "-c", code, str(port), *args], env=env)
    url = f"http://127.0.0.1:{port}/"
    while True:
        try: urllib.request.urlopen(url, timeout=5); return proc, url
        except OSError:
            if proc.poll() is not None: raise SystemExit(f"the page server exited with {proc.returncode}")
            time.sleep(0.2)


def first_visit(b, url: str, row: str = ROW):
    "A fresh browser context (nothing cached): ms from navigation to the first row, the context, requests and bytes."
    ctx = b.new_context()
    pg = ctx.new_page()
    got = []
    pg.on("requestfinished", lambda r: got.append(r.sizes()["responseBodySize"] + r.sizes()["responseHeadersSize"]))
    t = time.perf_counter(); pg.goto(url)
    pg.locator(row).first.wait_for(timeout=30_000)
    ms = (time.perf_counter() - t) * 1000
    pg.wait_for_load_state("networkidle")
    return ms, ctx, pg, len(got), sum(got)


def in_browser(folder: Path, loads: int = 5):
    from playwright.sync_api import sync_playwright
    t = time.perf_counter()
    app, url = start("import sys; from neuron_support.app import serve_app; "
                     "serve_app(sys.argv[2], port=int(sys.argv[1]), host='127.0.0.1', popularity=False)", str(folder))
    print(f"server start (imports, load): {time.perf_counter() - t:.1f} s")
    floor, floor_url = start(FLOOR)
    try:
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path="/usr/bin/chromium", args=args)
            compiler, floor_row = url + "compiler/", f"#models-table {GRID_ROW}"
            for u, r in ((url, ROW), (compiler, f"#diff {GRID_ROW}"), (floor_url, floor_row)):
                first_visit(b, u, r)[1].close()   # the servers' first answers: not timed
            usable, warm, searches, floors, grads = [], [], [], [], []
            for _ in range(loads):
                ms, ctx, pg, n, size = first_visit(b, url)   # a fresh context: nothing cached, a first visit
                usable.append(ms)
                t = time.perf_counter(); pg.reload()   # a later visit
                pg.locator(ROW).first.wait_for(timeout=30_000)
                warm.append((time.perf_counter() - t) * 1000)
                for q in ("model-0001", "org5/", "model-01"):
                    before = pg.locator("#count").inner_text()
                    t = time.perf_counter(); pg.locator("#search").fill(q)
                    pg.wait_for_function("b => document.getElementById('count').innerText !== b", arg=before)
                    searches.append((time.perf_counter() - t) * 1000)
                ctx.close()
                gms, gctx, _, gn, gsize = first_visit(b, compiler, f"#diff {GRID_ROW}")
                grads.append(gms); gctx.close()
                fms, fctx, _, fn, fsize = first_visit(b, floor_url, floor_row)
                floors.append(fms); fctx.close()
            b.close()
        print(f"load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min)")
        print(f"lookup page usable, first visit (navigation to first row): {stats(usable)}   {n} requests, {size / 1e3:.0f} kB")
        print(f"lookup page usable, later visit (reload):                  {stats(warm)}")
        print(f"compiler page (Gradio), first visit, first regression row: {stats(grads)}   {gn} requests, {gsize / 1e3:.0f} kB")
        print(f"floor, an empty Gradio page, first visit:                  {stats(floors)}   {fn} requests, {fsize / 1e3:.0f} kB")
        print(f"medians over the floor's: lookup page {np.median(usable) / np.median(floors):.2f}, compiler page {np.median(grads) / np.median(floors):.2f}")
        print(f"search typed to table answered:        {stats(searches)}")
    finally:
        for proc in (app, floor): proc.terminate(); proc.wait(10)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=50)
    ap.add_argument("--models", type=int, default=1000)
    ap.add_argument("--browser", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter(); n = build(Path(d), a.pairs, a.models)
        print(f"synthetic dataset: {n:,} rows in {a.pairs} pairs, written in {time.perf_counter() - t:.1f} s")
        in_process(Path(d))
        if a.browser: in_browser(Path(d))
