"""Faults at the card's scale, through the sweep's own scheduler (issue 58): `run_all` on a local Ray that declares 64
`neuron_cores`, over stand-in runs (as `sweep_simulation.py` has) of which some meet the infrastructure's faults at
stated rates, each try drawn anew: the node lost under the run (the task raises Ray's `NodeDiedError`, as a task whose
raylet died does), the Hub's 429 and 503 (the run's outcome says so, with a Retry-After), a full disk. The same runs
are swept once quietly and once with the faults; the two tables must hold the same verdicts.

    python benchmarks/fault_simulation.py [--runs 1000] [--cores 64] [--seconds 0.5] [--seed 0] [--sweep both] [--json]

Prints each sweep's wall time, the faults met by kind, the runs left without a verdict (none, with the rates below and
three retries), whether the verdicts are equal, and `cost`: the faulty sweep's wall time over the quiet one's.
`--sweep quiet` or `--sweep faulty` runs one of them alone, for `farm-bench` to time whole processes against each other.
"""
import argparse, json, os, random, sys, tempfile, time
from pathlib import Path

RATES = {"node lost": 0.01, "Hub 429": 0.03, "Hub 503": 0.03, "disk full": 0.01} # chance of each fault, per try of a run
FAIL_SHARE = 0.2 # the stand-ins whose verdict is a FAIL (drawn once per model: what the model would do)


def verdict(model_id:str, seed:int)->str:
    "What a stand-in run concludes, the same on every try: PASS, or FAIL(gen) for a fifth of them."
    return "FAIL(gen)" if random.Random(f"{seed}:{model_id}").random() < FAIL_SHARE else "PASS"


def faulty_run(item, setting, env)->dict:
    "Stand-in for a run: hold its cores for its time, then meet a fault (drawn for this try) or return its verdict's row."
    import time
    from neuron_support.publish import table_row
    p = setting.parameters
    tries = Path(p["tries"]) / item.model_id.replace("/", "--")
    n = int(tries.read_text()) + 1 if tries.exists() else 1
    tries.write_text(str(n))
    time.sleep(p["seconds"])
    if p["faults"]:
        draw, edge = random.Random(f"{p['seed']}:{item.model_id}:{n}").random(), 0.0
        for fault, rate in RATES.items():
            edge += rate
            if draw < edge:
                if fault == "node lost":
                    from ray.exceptions import NodeDiedError
                    raise NodeDiedError("the stand-in's node, lost")
                return {"fault": fault, "retry_after": 1.0 if fault.startswith("Hub") else None, "error": f"a stand-in's {fault}"}
    return table_row(item.model_id, verdict(item.model_id, p["seed"]), setting.stack, neuron_cores=item.cores, runner="run_dense",
                     tested_at="2026-12-01T00:00:00Z", wall_s=p["seconds"])


def one_sweep(todo, stack, seconds:float, seed:int, faults:bool, cores:int)->dict:
    "Run the stand-ins through run_all into a fresh folder: its wall time, the runs left, the faults met, the verdicts."
    from neuron_support.publish import read_table, table_path
    from neuron_support.stack import pair_key
    from neuron_support.sweep import RunSetting, Progress, SweepOptions, run_all
    out, tries = tempfile.mkdtemp(prefix="fault-sim-"), tempfile.mkdtemp(prefix="fault-sim-tries-")
    lines = []
    class Lines(Progress):
        def say(self, line=None):
            if line: lines.append(line)
    setting = RunSetting(stack, out, "(stand-in)", time_limit=3600, grace=60, execute=faulty_run, budgeted=False,
                         parameters={"seconds": seconds, "seed": seed, "faults": faults, "tries": tries})
    t = time.time()
    left = run_all(todo, setting, SweepOptions(slots=cores, prefetch_gb=0), None, {}, Lines(len(todo), open(os.devnull, "w"), live=False))
    wall = time.time() - t
    met = {f: sum(f"not the model's failure: {f}" in l for l in lines) for f in RATES}
    table = read_table(table_path(out, pair_key(stack)))
    return {"wall_s": round(wall, 2), "left": left, "faults_met": met, "verdicts": dict(zip(table.model_id, table.result))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--cores", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=0.5, help="seconds each stand-in holds its cores")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sweep", choices=("both", "quiet", "faulty"), default="both", help="which sweeps to run (default both, compared)")
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    a = ap.parse_args()
    from neuron_support.stack import read_versions
    from neuron_support.registry import library_stack
    from neuron_support.sweep import SweepItem, start_ray
    stack = library_stack("transformers", found={"neuron": [a.cores, 24 * 2**30]}, versions={**read_versions(), "neuronx_cc": "0.0.sim"})
    todo = [SweepItem(f"sim/model-{i:04d}", "run", i + 1, 1, "run_dense") for i in range(a.runs)]
    sys.path.insert(0, str(Path(__file__).parent))
    from sweep_simulation import warm_workers
    warm_workers(start_ray(stack, None, a.cores), a.cores)   # every worker started before either clock: the figures are the sweeps'
    if a.sweep != "both":
        alone = one_sweep(todo, stack, a.seconds, a.seed, a.sweep == "faulty", a.cores)
        print(json.dumps({"sweep": a.sweep, "wall_s": alone["wall_s"], "left": len(alone["left"]), "faults_met": alone["faults_met"]})); return
    quiet = one_sweep(todo, stack, a.seconds, a.seed, False, a.cores)
    faulty = one_sweep(todo, stack, a.seconds, a.seed, True, a.cores)
    figures = {"runs": a.runs, "cores": a.cores, "seconds": a.seconds, "rates": RATES,
               "quiet_wall_s": quiet["wall_s"], "faulty_wall_s": faulty["wall_s"], "cost": round(faulty["wall_s"] / quiet["wall_s"], 3),
               "faults_met": faulty["faults_met"], "left": len(faulty["left"]),
               "verdicts_equal": faulty["verdicts"] == quiet["verdicts"], "verdicts": len(quiet["verdicts"])}
    print(json.dumps(figures) if a.json else json.dumps(figures, indent=1))


if __name__ == "__main__": main()
