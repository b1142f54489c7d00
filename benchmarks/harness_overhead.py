"""Harness overhead: one model's run, layer by layer, each layer's wall time against the one below it, in one benchmark run.

    python benchmarks/harness_overhead.py [--models ID ...] [--repeat N] [--threads N] [--out FILE]

The layers, each timed from outside as a whole process (a sweep: the sweep's own view of it):

(a) the floor: one `python -c` process doing the work by hand, as run.py does it: import torch and transformers, find the
    checkpoint in the Hub cache, load it in bf16, `torch.compile(forward, backend=aot_eager, fullgraph=True, dynamic=False)`,
    32 tokens greedy twice with a static cache (the plan's inputs: chat template, prefill chunk), then the CPU's fp32
    reference (eager attention, the same prompt ids, 32 tokens greedy, each step's log-probabilities);
(b) `python3 run.py` in a run folder (the script the CLI rendered in the warm-up round, copied to a fresh folder);
(c) `neuron-support run ID --out DIR --device cpu`: the CLI, papermill, a kernel, the notebook rendering and running run.py;
(d) one run through a sweep, `sweep(out_dir=..., items=[item], slots=1)`: the run's child process as the sweep saw it
    ("ended after N s" in the run's sweep.log: papermill, kernel, notebook, run.py) and the whole `sweep()` call (Ray's
    start and stop included).

Ratios: b/a, c/b and d/b (both of d's figures). Each figure is the median of --repeat rounds (default 2), after one
warm-up round of all four layers that is not counted: it fills the Hugging Face cache (HF_HOME under the benchmark's
scratch folder, shared by every layer) and the page cache with the packages' files. The layers of a round run one after
the other, their order rotated from round to round. Beside the wall times, the JSON keeps each process layer's CPU
seconds (a, b, c: its own and its descendants', by wait4), the machine's load as each layer started, the floor's stages,
and per round the checks: every layer PASSes, none read a cached reference, the floor's tokens are run.py's.

The CPU reference is never shared: every measurement of every layer gets a fresh, empty NEURON_SUPPORT_CACHE (and
TORCHINDUCTOR_CACHE_DIR), and no layer is given --reference-cache, so each computes its fp32 reference itself
(the script checks that each row says `reference_cached` false). The floor has no cache at all.

Threads: every layer runs with OMP_NUM_THREADS=1 (--threads), torch's one intra-op thread, because a sweep's runs on the
CPU have it anyway: Ray sets OMP_NUM_THREADS=1 in its workers (a run asks for no Ray CPU), and the papermill child,
run.py and its rank inherit it, while `python3 run.py` and the CLI by hand take every core. Left to each layer
(--threads 0), the sweep's figure is another workload's, not the harness's overhead: on this shared 2-core machine,
the test suite running beside it, SmolLM2's run through the sweep (one thread) took 88 s, `python3 run.py` (two) 239 s
(2026-12-02).

Models: the demo catalog's (a local Hub), by default `neuron-support-demo/tiny-llama` and the real
SmolLM2-135M-Instruct (`neuron_support.demo.SMOLLM2_ID`), each on one core of the CPU stack (`aot_eager`). The plan the
floor follows is the selection's (`make_plan`'s, through `sweep_list`). The figures go to stdout as a table and to
benchmarks/results/harness_overhead.json.
"""
import argparse, json, os, re, shutil, statistics, subprocess, sys, tempfile, time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAYERS = ("floor", "run_py", "cli", "sweep")

FLOOR = r'''
import json, sys, time
t0 = time.time()
import functools, gc
import torch, transformers
from huggingface_hub import snapshot_download
spec = json.loads(sys.argv[1]); inp = spec["inputs"]; n_new = inp["max_new_tokens"]
t_import = time.time()
path = snapshot_download(spec["model_id"], revision=spec["revision"] or None)   # the cached snapshot, as run.py finds it
tok = transformers.AutoTokenizer.from_pretrained(path)
model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).eval()
t_load = time.time()
if inp["chat"]:
    enc = tok.apply_chat_template([{"role": "user", "content": inp["prompt"]}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)
else: enc = tok(inp["prompt"], return_tensors="pt")
ids, mask = enc["input_ids"], enc["attention_mask"]
cache_len = next(b for b in (256, 512, 1024, 2048, 4096) if b >= ids.shape[1] + n_new)
cfg = transformers.GenerationConfig(max_new_tokens=n_new, min_new_tokens=inp.get("min_new_tokens") or None, do_sample=False,
                                    num_beams=1, cache_implementation="static", max_cache_len=cache_len,
                                    prefill_chunk_size=inp.get("prefill_chunk_size") or None, disable_compile=True,
                                    pad_token_id=tok.pad_token_id or tok.eos_token_id)
fwd = torch.compile(model.forward, backend=spec["backend"], fullgraph=True, dynamic=False)
def plain(x):
    if not torch.is_tensor(x) or x.stride() == torch.empty(x.shape, device="meta").stride(): return x
    return x.clone(memory_format=torch.contiguous_format)
@functools.wraps(model.forward)
def forward(*a, **k): return fwd(*map(plain, a), **{key: plain(v) for key, v in k.items()})
model.forward = forward
with torch.inference_mode():
    out = model.generate(input_ids=ids, attention_mask=mask, generation_config=cfg)
    t_first = time.time()
    out2 = model.generate(input_ids=ids, attention_mask=mask, generation_config=cfg)
t_gen = time.time()
tokens = out[0, ids.shape[1]:].tolist()
del model; gc.collect()
ref = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()
with torch.no_grad():
    r = ref.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n_new, do_sample=False, num_beams=1,
                     output_scores=True, return_dict_in_generate=True)
ref_tokens = r.sequences[0, ids.shape[1]:].tolist()
logprobs = torch.stack([s[0].float().log_softmax(-1) for s in r.scores]).to(torch.float16)
t_ref = time.time()
print(json.dumps({"import_s": t_import - t0, "load_s": t_load - t_import, "first_gen_s": t_first - t_load,
                  "warm_gen_s": t_gen - t_first, "reference_s": t_ref - t_gen, "tokens": tokens,
                  "warm_equal": out2[0, ids.shape[1]:].tolist() == tokens, "cpu_equal": ref_tokens == tokens}))
'''


def timed_process(cmd, cwd, env, log, cpu:dict):
    "Run a command to its end, its output into `log`; (seconds, its stdout's last line); its CPU seconds (and its waited-for descendants') into cpu['s']."
    t = time.time()
    with open(log, "w") as f, tempfile.TemporaryFile("w+") as out:
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=f, stdin=subprocess.DEVNULL, text=True)
        _, status, ru = os.wait4(p.pid, 0)   # its own rusage, not that of other children of this process (Ray's)
        s = time.time() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0); stdout = out.read(); f.write(stdout)
    cpu["s"] = ru.ru_utime + ru.ru_stime
    if p.returncode: raise SystemExit(f"{' '.join(map(str, cmd[:3]))}... exited {p.returncode}: see {log}")
    return s, (stdout.strip().splitlines() or [""])[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    from neuron_support.demo import SMOLLM2_ID
    ap.add_argument("--models", nargs="+", default=["neuron-support-demo/tiny-llama", SMOLLM2_ID])
    ap.add_argument("--repeat", type=int, default=2, help="rounds counted, after the warm-up round (default 2)")
    ap.add_argument("--notebook", default=None, help="the run notebook template (default: nbs/run.ipynb)")
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of every layer (default 1, as Ray gives a sweep's runs); 0: each layer's own")
    ap.add_argument("--out", default=str(HERE / "results" / "harness_overhead.json"))
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (logs, run folders)")
    a = ap.parse_args()
    from neuron_support.demo import build_demo
    from neuron_support.hub import hub_server, hub_env
    from neuron_support.select import sweep_list
    from neuron_support.stack import pair_key
    from neuron_support.registry import library_stack
    from neuron_support.sweep import environment, sweep_item, sweep, run_folder
    scratch = Path(tempfile.mkdtemp(prefix="harness-bench-"))
    print(f"scratch folder: {scratch}", file=sys.stderr, flush=True)
    catalog = Path(build_demo())
    stack = library_stack("transformers", "cpu"); pair = pair_key(stack)
    cli = Path(sys.executable).with_name("neuron-support")
    started = time.time()
    results = {"date": time.strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()}-core CPU", "stack": pair, "repeat": a.repeat, "threads": a.threads or "each layer's own",
               "reference": "not shared: a fresh NEURON_SUPPORT_CACHE per measurement, no --reference-cache", "models": {}}
    with open(scratch / "hub.log", "w") as hub_log, hub_server(catalog, stderr=hub_log) as endpoint, \
         environment(**hub_env(endpoint, scratch / "hf-home")):
        listed = {c.model_id: c for c in sweep_list(stack=stack, max_runs=None, endpoint=endpoint, data_dir=None)}
        for model in a.models:
            c = listed.get(model)
            if c is None or c.decision != "run" or c.plan is None: raise SystemExit(f"{model}: not a run of the demo's list ({c and c.decision})")
            if c.cores != 1: raise SystemExit(f"{model}: planned on {c.cores} cores, not one")
            item, plan = sweep_item(c), c.plan
            spec = json.dumps({"model_id": model, "revision": c.revision, "inputs": plan.inputs, "backend": stack.backend})
            fig = {k: [] for k in ("floor_s", "run_py_s", "cli_s", "sweep_child_s", "sweep_s")}
            extra = {k: [] for k in ("floor_stages", "run_py_wall_s", "cli_notebook_wall_s", "sweep_notebook_wall_s", "cpu_s", "load")}
            checks = []
            run_py = None
            for i in range(a.repeat + 1):   # round 0 warms up and is not counted
                rd = scratch / re.sub(r"\W", "-", model) / f"round-{i}"; rd.mkdir(parents=True)
                def env_for(layer):   # a fresh reference cache (and inductor cache) for each measurement
                    cache = rd / f"cache-{layer}"
                    e = {"NEURON_SUPPORT_CACHE": str(cache), "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor")}
                    return e | ({"OMP_NUM_THREADS": str(a.threads)} if a.threads else {})
                got, cpu, load = {}, {}, {}
                order = list(LAYERS[i % 4:] + LAYERS[:i % 4]) if i else ["cli", "run_py", "floor", "sweep"]   # warm-up: the CLI renders run.py
                for layer in order:
                    e, c = env_for(layer), {}
                    load[layer] = os.getloadavg()[0]   # the machine's 1-minute load as the layer starts: it is shared
                    print(f"[{time.time() - started:6.0f} s] {model} round {i}: {layer}", file=sys.stderr, flush=True)
                    if layer == "floor":
                        s, last = timed_process([sys.executable, "-c", FLOOR, spec], rd, {**os.environ, **e}, rd / "floor.log", c)
                        o = json.loads(last)
                        got["floor"] = (s, o)
                    elif layer == "run_py":
                        d = rd / "run-py"; d.mkdir()
                        shutil.copy(run_py, d / "run.py")
                        s, last = timed_process([sys.executable, "run.py"], d, {**os.environ, **e}, rd / "run_py.log", c)
                        got["run_py"] = (s, json.loads(last))
                    elif layer == "cli":
                        out = rd / "cli"
                        s, _ = timed_process([str(cli), "run", model, "--out", str(out), "--device", "cpu"], rd,
                                             {**os.environ, **e}, rd / "cli.log", c)
                        d = run_folder(out, pair, model)
                        got["cli"] = (s, json.loads((d / "result.json").read_text()))
                        run_py = run_py or d / "run.py"
                    else:
                        out = rd / "sweep"
                        t = time.time()
                        with environment(**e), open(rd / "sweep.log", "w") as log:
                            sweep(out_dir=out, items=[replace(item)], slots=1, notebook=a.notebook, stack=stack, stream=log)
                        s = time.time() - t
                        d = run_folder(out, pair, model)
                        child = float(re.findall(r"ended after ([\d.]+) s", (d / "sweep.log").read_text())[-1])
                        got["sweep"] = ((s, child), json.loads((d / "result.json").read_text()))
                    if "s" in c: cpu[layer] = round(c["s"], 1)   # the sweep's run is Ray's worker's child: not counted here
                rows = {"run_py": got["run_py"][1], "cli": got["cli"][1], "sweep": got["sweep"][1]}
                check = {"round": i, "floor_cpu_equal": got["floor"][1]["cpu_equal"],
                         **{f"{k}_result": r.get("result") for k, r in rows.items()},
                         **{f"{k}_reference_cached": r.get("reference_cached") for k, r in rows.items()},
                         "floor_tokens_equal_run_py": got["floor"][1]["tokens"] == got["run_py"][1].get("tokens")}
                checks.append(check)
                print(f"          {json.dumps(check)}", file=sys.stderr, flush=True)
                if any(v is not False for k, v in check.items() if k.endswith("reference_cached")):
                    raise SystemExit(f"{model}: a layer read its CPU reference from a cache: {check}")
                if not i: continue
                fig["floor_s"].append(got["floor"][0]); fig["run_py_s"].append(got["run_py"][0]); fig["cli_s"].append(got["cli"][0])
                fig["sweep_s"].append(got["sweep"][0][0]); fig["sweep_child_s"].append(got["sweep"][0][1])
                extra["floor_stages"].append({k: round(v, 2) for k, v in got["floor"][1].items() if k.endswith("_s")})
                extra["run_py_wall_s"].append(got["run_py"][1].get("wall_s"))
                extra["cli_notebook_wall_s"].append(rows["cli"].get("wall_s"))
                extra["sweep_notebook_wall_s"].append(rows["sweep"].get("wall_s"))
                extra["cpu_s"].append(cpu); extra["load"].append({k: round(v, 2) for k, v in load.items()})
            med = {k: round(statistics.median(v), 1) for k, v in fig.items()}
            ratios = {"run_py/floor": med["run_py_s"] / med["floor_s"], "cli/run_py": med["cli_s"] / med["run_py_s"],
                      "sweep_child/run_py": med["sweep_child_s"] / med["run_py_s"], "sweep/run_py": med["sweep_s"] / med["run_py_s"]}
            cpu_med = {k: round(statistics.median(r[k] for r in extra["cpu_s"]), 1) for k in ("floor", "run_py", "cli")}
            cpu_ratios = {"run_py/floor": round(cpu_med["run_py"] / cpu_med["floor"], 3), "cli/run_py": round(cpu_med["cli"] / cpu_med["run_py"], 3)}
            results["models"][model] = {"median_s": med, "ratios": {k: round(v, 3) for k, v in ratios.items()},
                                        "median_cpu_s": cpu_med, "cpu_ratios": cpu_ratios,
                                        "samples_s": {k: [round(x, 1) for x in v] for k, v in fig.items()}, **extra, "checks": checks}
            print(json.dumps({model: results["models"][model]["median_s"] | results["models"][model]["ratios"]}), file=sys.stderr, flush=True)
    results["benchmark_s"] = round(time.time() - started, 1)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nharness overhead, {results['machine']}, {pair}, OMP_NUM_THREADS {a.threads or 'as each layer has it'}, "
          f"median of {a.repeat} after a warm-up round; reference not shared\n")
    head = ["model", "(a) floor", "(b) run.py", "(c) CLI", "(d) sweep child", "(d) sweep()", "b/a", "c/b", "d child/b", "d sweep()/b"]
    lines = [head]
    for model, r in results["models"].items():
        m, q = r["median_s"], r["ratios"]
        lines.append([model.split("/")[-1], *(f"{m[k]:.1f} s" for k in ("floor_s", "run_py_s", "cli_s", "sweep_child_s", "sweep_s")),
                      *(f"{q[k]:.2f}" for k in ("run_py/floor", "cli/run_py", "sweep_child/run_py", "sweep/run_py"))])
    widths = [max(len(l[j]) for l in lines) for j in range(len(head))]
    for l in lines: print("  ".join(x.ljust(w) for x, w in zip(l, widths)))
    print(f"\nfigures in {a.out}")
    if not a.keep: shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
