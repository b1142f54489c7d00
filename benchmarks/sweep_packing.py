"""Packing: the same demo runs swept with 1 CPU slot and with 2, wall time as a ratio; then the whole demo sweep's
time and peak memory (every process of the sweep: driver, Ray, papermill, kernels, ranks).

    python benchmarks/sweep_packing.py [--runs N] [--no-demo] [--out DIR]

Each sweep starts its own local Ray and writes into its own folder; they share the Hugging Face cache, filled
before the timed sweeps, so that no timed sweep downloads.
"""
import argparse, json, os, shutil, tempfile, threading, time
from pathlib import Path

import psutil


class PeakMemory(threading.Thread):
    "The peak of the summed resident memory of this process and all its descendants, sampled every 0.2 s."
    def __init__(self):
        super().__init__(daemon=True); self.peak, self.stop = 0, threading.Event()
    def run(self):
        me = psutil.Process()
        while not self.stop.is_set():
            total = 0
            for p in [me, *me.children(recursive=True)]:
                try: total += p.memory_info().rss
                except psutil.Error: pass
            self.peak = max(self.peak, total); time.sleep(0.2)


def timed_sweep(**kw):
    from neuron_support.sweep import sweep
    mem = PeakMemory(); mem.start()
    t = time.time(); path = sweep(**kw); wall = time.time() - t
    mem.stop.set(); mem.join()
    return wall, mem.peak / 2**30, path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=6, help="demo runs in the packing comparison")
    ap.add_argument("--notebook", default=None, help="the run notebook template (default: nbs/run.ipynb)")
    ap.add_argument("--no-demo", action="store_true", help="skip the whole demo sweep")
    ap.add_argument("--out", default=None, help="where the sweeps write (default: a temporary folder)")
    a = ap.parse_args()
    out = Path(a.out or tempfile.mkdtemp(prefix="sweep-bench-"))
    from neuron_support.demo import build_demo
    from neuron_support.hub import hub_server, hub_env
    from neuron_support.select import sweep_list
    from neuron_support.registry import library_stack
    from neuron_support.sweep import environment, sweep_item
    from neuron_support.publish import read_table
    catalog = Path(build_demo())
    figures = {"cpus": os.cpu_count()}
    with hub_server(catalog) as endpoint, environment(**hub_env(endpoint, out / "hf-home")):
        # packing: the first N runs of the demo list (its tiny checkpoints: the real SmolLM2 alone takes minutes here), with 1 slot and with 2 (a first, untimed sweep warms the cache)
        stack = library_stack("transformers")   # the demo's transformers list: the figures' history is that list's
        items = [sweep_item(c) for c in sweep_list(stack=stack, max_runs=a.runs + 1, endpoint=endpoint)]
        items = [i for i in items if i.decision == "run" and i.model_id.startswith("neuron-support-demo/")][:a.runs]
        figures["packing_models"] = [f"{i.model_id} ({i.cores} core{'s' if i.cores > 1 else ''})" for i in items]
        from huggingface_hub import snapshot_download
        for i in items: snapshot_download(i.model_id, revision=i.revision, endpoint=endpoint, cache_dir=str(out / "hf-home" / "hub"))
        for slots in (1, 2):
            wall, peak, path = timed_sweep(out_dir=out / f"slots-{slots}", items=items, slots=slots, notebook=a.notebook, stack=stack)
            figures[f"slots_{slots}"] = {"wall_s": round(wall, 1), "peak_rss_gib": round(peak, 2),
                                         "results": read_table(path).result.value_counts().to_dict()}
        figures["packing_ratio_1_over_2"] = round(figures["slots_1"]["wall_s"] / figures["slots_2"]["wall_s"], 2)
        print(json.dumps(figures, indent=1), flush=True)
        if not a.no_demo:
            # the whole demo sweep, as `neuron-support sweep --demo` runs it (2 slots on this machine)
            wall, peak, path = timed_sweep(out_dir=out / "demo", slots=2, notebook=a.notebook, stack=stack)
            t = read_table(path)
            figures["demo_sweep"] = {"wall_s": round(wall, 1), "peak_rss_gib": round(peak, 2), "models": len(t),
                                     "results": t.result.value_counts().to_dict()}
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
