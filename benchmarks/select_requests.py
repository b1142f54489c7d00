"""How many Hub requests selection costs: the demo catalog and a synthetic catalog of N models.

    python benchmarks/select_requests.py [--models 5000] [--catalog DIR] [--page-size 1000] [--demo]

Writes the synthetic catalog into DIR (default ~/.cache/neuron-support/synthetic-N, reused), serves it with the local
Hub in a child process, and runs `sweep_list` twice: a sweep of 100 runs, and the whole list (every model decided).
Counts every request huggingface_hub sends (`count_requests`), listing pages apart. The first serve of a fresh
catalog is slow (the server hashes every file once); that time is not part of the figures.
"""
import argparse, json, os, time
from collections import Counter
from pathlib import Path

from neuron_support.hub import hub_server
from neuron_support.select import count_requests, sweep_list, synthetic_catalog
from neuron_support.registry import library_stack


def measure(endpoint, max_runs):
    t = time.monotonic()
    with count_requests() as sent:
        sl = sweep_list(stack=library_stack("transformers", "cpu", found={}), endpoint=endpoint, max_runs=max_runs)
    kinds = Counter("listing page" if "pipeline_tag=" in u else "endpoint check" if u.endswith("?limit=1")
                    else "per model" if "/resolve/" in u else "other" for _, u in sent)
    d = Counter(c.decision for c in sl)
    return {"max_runs": max_runs, "models": len(sl), "run": d["run"], "skip": d["skip"], "excluded": d["excluded"],
            "requests": len(sent), **kinds, "seconds": round(time.monotonic() - t, 1)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", type=int, default=5000)
    p.add_argument("--catalog")
    p.add_argument("--page-size", type=int, default=1000)
    p.add_argument("--demo", action="store_true", help="measure the demo catalog instead")
    a = p.parse_args()
    if a.demo:
        from neuron_support.demo import build_demo
        cat = build_demo()
    else:
        cat = Path(a.catalog or Path.home() / ".cache" / "neuron-support" / f"synthetic-{a.models}")
        if not (cat / "catalog.json").exists(): synthetic_catalog(cat, a.models)
    with hub_server(cat, page_size=a.page_size, timeout=1800) as endpoint:
        for max_runs in (100, None):
            print(json.dumps({"catalog": str(cat), "page_size": a.page_size, **measure(endpoint, max_runs)}))


if __name__ == "__main__":
    main()
