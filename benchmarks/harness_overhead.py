"""Harness overhead: one model run through the sweep (Ray, papermill, a kernel, the notebook) against
`python3 run.py` of the same model in its run folder, as a ratio, with the stages that make up the difference.

    python benchmarks/harness_overhead.py [--model ID] [--repeat N]

Runs on the demo catalog (a local Hub). The sweep's run is timed three ways: the whole `sweep()` call (Ray's start
included), the run's child process (papermill + kernel + notebook, from the run's sweep.log) and the notebook's own
wall_s (the run as run.py measures it). The weights are downloaded once first, so no stage pays for the network.
"""
import argparse, json, os, re, subprocess, sys, tempfile, time
from pathlib import Path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="neuron-support-demo/tiny-llama")
    ap.add_argument("--notebook", default=None, help="the run notebook template (default: nbs/run.ipynb)")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    from neuron_support.demo import build_demo
    from neuron_support.hub import hub_server, hub_env
    from neuron_support.select import sweep_list
    from neuron_support.stack import detect_stack, pair_key
    from neuron_support.sweep import environment, sweep_item, sweep, run_folder
    out = Path(tempfile.mkdtemp(prefix="harness-bench-"))
    catalog = Path(build_demo())
    stack = detect_stack(); pair = pair_key(stack)
    figures = {"model": a.model, "sweep_s": [], "child_s": [], "notebook_wall_s": [], "run_py_s": []}
    with hub_server(catalog) as endpoint, environment(**hub_env(endpoint, out / "hf-home")):
        item = next(sweep_item(c) for c in sweep_list(stack=stack, max_runs=None, endpoint=endpoint) if c.model_id == a.model)
        for i in range(a.repeat + 1):  # the first round warms the Hugging Face cache and is not counted
            d = out / f"round-{i}"
            t = time.time(); sweep(out_dir=d, items=[item], slots=1, notebook=a.notebook); sweep_s = time.time() - t
            run_dir = run_folder(d, pair, a.model)
            child = float(re.findall(r"ended after ([\d.]+) s", (run_dir / "sweep.log").read_text())[-1])
            row = json.loads((run_dir / "result.json").read_text())
            t = time.time()
            subprocess.run([sys.executable, "run.py"], cwd=run_dir, check=True, capture_output=True, env=os.environ)
            run_py = time.time() - t
            if i:
                for k, v in (("sweep_s", sweep_s), ("child_s", child), ("notebook_wall_s", row.get("wall_s")), ("run_py_s", run_py)):
                    figures[k].append(round(v, 1) if v is not None else None)
    med = lambda xs: sorted(x for x in xs if x is not None)[len([x for x in xs if x is not None]) // 2]
    figures["ratio_sweep_over_run_py"] = round(med(figures["sweep_s"]) / med(figures["run_py_s"]), 2)
    figures["ratio_child_over_run_py"] = round(med(figures["child_s"]) / med(figures["run_py_s"]), 2)
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
