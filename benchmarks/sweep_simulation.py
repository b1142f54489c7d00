"""Packing at trn2 scale, through the sweep's own scheduler (issue 14): `run_all` on a local Ray that declares 64
`neuron_cores` (a trn2.48xlarge), the real core map and the real order of the queue, over stand-in runs that hold their
cores for their duration (scaled: seconds, not minutes) instead of running a model.

    python benchmarks/sweep_simulation.py [--runs 100] [--cores 64] [--scale 2] [--seed 0] [--json]

Prints `makespan_s` (the sweep's wall time), `lower_bound_s` (the larger of the total core-seconds over the cores and
the longest run) and their `ratio`; the target is 1.15 at most.

The mix (MIX below) is a model of the card's selection, the Hub's 100 most used text-generation and image-text models,
on trn2 cores of 24 GB with the plan's 25% margin: one core holds up to about 9.6B parameters in bf16, two 19B, four
38B, eight 77B, sixteen 154B. The Hub's most downloaded generators are mostly 0.5B to 8B (Qwen2.5/3, Llama 3.x, Gemma,
Mistral, Phi), then 12B to 14B, 24B to 32B, 70B and a few larger: 60% on one core, 15% on two, 12% on four, 9% on
eight, 4% on sixteen. A run's time is mostly compilation, which grows with the model: 5 minutes plus 3 per doubling of
the cores, give or take 30%. `--scale` is the seconds one of those minutes takes here.
"""
import argparse, json, math, os, random, sys, tempfile, time
from pathlib import Path

MIX = {1: 0.60, 2: 0.15, 4: 0.12, 8: 0.09, 16: 0.04} # share of the selection on each number of cores
BASE_MIN, PER_DOUBLING_MIN, JITTER = 5.0, 3.0, 0.3   # minutes of a run: BASE + PER_DOUBLING * log2(cores), +-JITTER


def stand_ins(runs:int, seed:int)->list: # [(model_id, cores, minutes)] in list order
    "The runs of a simulated selection: cores drawn from MIX, minutes from the cores."
    rng = random.Random(seed)
    out = []
    for i in range(runs):
        cores = rng.choices(list(MIX), weights=list(MIX.values()))[0]
        minutes = (BASE_MIN + PER_DOUBLING_MIN * math.log2(cores)) * rng.uniform(1 - JITTER, 1 + JITTER)
        out.append((f"sim/model-{i:03d}", cores, minutes))
    return out


def hold_cores(item, setting, env)->dict:
    "Stand-in for a run: hold the cores the core map gave it for its duration, then return its row."
    import time
    from neuron_support.publish import table_row
    time.sleep(setting.parameters["seconds"][item.model_id])
    return table_row(item.model_id, "PASS", setting.stack, neuron_cores=item.cores, runner="run_dense",
                     tested_at="2026-12-01T00:00:00Z", wall_s=setting.parameters["seconds"][item.model_id])


def warm_workers(ray, n:int):
    "Start n Ray workers before the clock starts (each imports the sweep module once): the figure is the packing's, not Python's."
    @ray.remote(num_cpus=0, resources={"neuron_cores": 1})
    def ready():
        import time, neuron_support.sweep  # noqa: F401
        time.sleep(3)
    ray.get([ready.remote() for _ in range(n)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--cores", type=int, default=64, help="NeuronCores of the simulated host (default 64: a trn2.48xlarge)")
    ap.add_argument("--scale", type=float, default=2.0, help="seconds per simulated minute")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    a = ap.parse_args()
    from neuron_support.stack import read_versions
    from neuron_support.registry import library_stack
    from neuron_support.sweep import RunSetting, SweepItem, Progress, run_all, start_ray, SweepOptions
    stack = library_stack("transformers", found={"neuron": [a.cores, 24 * 2**30]}, versions={**read_versions(), "neuronx_cc": "0.0.sim"})
    runs = stand_ins(a.runs, a.seed)
    seconds = {m: minutes * a.scale for m, _, minutes in runs}
    todo = [SweepItem(m, "run", i + 1, cores, "run_dense") for i, (m, cores, _) in enumerate(runs)]
    out = tempfile.mkdtemp(prefix="sweep-sim-")
    setting = RunSetting(stack, out, "(stand-in)", time_limit=3600, grace=60, parameters={"seconds": seconds}, execute=hold_cores, budgeted=False)
    ray = start_ray(stack, None, a.cores)
    warm_workers(ray, min(a.cores, sum(1 for _, c, _ in runs if c == 1)))
    t = time.time()
    run_all(todo, setting, SweepOptions(slots=a.cores, prefetch_gb=0), None, {}, Progress(len(todo), open(os.devnull, "w"), live=False))
    makespan = time.time() - t
    lower = max(sum(c * seconds[m] for m, c, _ in runs) / a.cores, max(seconds.values()))
    figures = {"runs": a.runs, "cores": a.cores, "scale": a.scale, "mix": {str(k): v for k, v in MIX.items()},
               "makespan_s": round(makespan, 2), "lower_bound_s": round(lower, 2), "ratio": round(makespan / lower, 3)}
    print(json.dumps(figures) if a.json else json.dumps(figures, indent=1))


if __name__ == "__main__": main()
