"""One vision run against a hand-written torch.compile of the same model: compile, warm latency and wall, on this machine.

    python benchmarks/vision_runner.py [--model neuron-support-demo/tiny-vit] [--repeat 2]

(a) the floor: one `python -c` process doing the run's work by hand: import torch and transformers, find the checkpoint in
    the Hub cache, load it in bf16 with its image processor, the photograph through the processor, `torch.compile(model,
    backend=aot_eager, fullgraph=True, dynamic=False)`, a first (compiling) and a warm forward pass, then the CPU's fp32
    and bf16 references (eager);
(b) `python3 run.py` of the same plan in a run folder (its own rank process, the check, the photograph saved).
Each figure is the median of --repeat rounds after a warm-up round that fills the Hugging Face cache; every round gets a
fresh, empty reference cache, so run.py computes its references as the floor does. One torch thread each
(OMP_NUM_THREADS=1), the demo catalog on a local Hub. Figures to stdout and to benchmarks/results/vision_runner.json.
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent

FLOOR = r'''
import json, sys, time
t0 = time.time()
import torch, transformers
from huggingface_hub import snapshot_download
from neuron_support.transformers_vision_runs import photo
spec = json.loads(sys.argv[1])
path = snapshot_download(spec["model_id"], revision=spec["revision"] or None)
cls = getattr(transformers, spec["head_class"])
proc = transformers.AutoImageProcessor.from_pretrained(path)
model = cls.from_pretrained(path, dtype=torch.bfloat16).eval()
x = proc(images=photo(), return_tensors="pt")
dev = {k: v.to(torch.bfloat16) for k, v in x.items()}
fwd = torch.compile(model, backend="aot_eager", fullgraph=True, dynamic=False)
with torch.inference_mode():
    t = time.time(); fwd(**dev); first = time.time() - t
    t = time.time(); out = fwd(**dev); warm = time.time() - t
refs = []
for dtype in (torch.float32, torch.bfloat16):
    ref = cls.from_pretrained(path, dtype=dtype, attn_implementation="eager").eval()
    with torch.inference_mode(): refs.append(ref(**{k: v.to(dtype) for k, v in x.items()}).logits[0].float())
print(json.dumps({"first_s": first, "warm_s": warm, "compile_s": max(first - warm, 0.0), "wall_s": time.time() - t0,
                  "top1_equal": int(out.logits[0].argmax()) == int(refs[0].argmax())}))
'''

RENDER = r'''
import json, sys
from pathlib import Path
from neuron_support.libraries import make_plan, library_stack
from neuron_support.script import render_run_py
stack = library_stack("transformers", "cpu")
plan = make_plan(sys.argv[1], stack=stack)   # in a child: the Hub client reads HF_ENDPOINT when it is imported
(Path(sys.argv[2]) / "run.py").write_text(render_run_py(plan, stack))
print(json.dumps({"model_id": plan.model_id, "revision": plan.revision, "head_class": plan.head_class, "runner": plan.runner}))
'''


def run_py_round(folder: Path, env: dict) -> dict:
    t = time.time()
    p = subprocess.run([sys.executable, "run.py", "--reference-cache", tempfile.mkdtemp()], cwd=folder, capture_output=True, text=True, env=env)
    wall = time.time() - t
    outcome = json.loads(p.stdout.strip().splitlines()[-1])
    warm_ms = float(re.search(r"forward pass done: .* ([\d.]+) ms warm", p.stderr).group(1))
    return {"wall_s": wall, "compile_s": outcome["compile_s"], "warm_s": warm_ms / 1000, "result": outcome["result"]}


def floor_round(spec: dict, env: dict) -> dict:
    t = time.time()
    p = subprocess.run([sys.executable, "-c", FLOOR, json.dumps(spec)], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    return {**json.loads(p.stdout.strip().splitlines()[-1]), "process_wall_s": time.time() - t}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="neuron-support-demo/tiny-vit")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    from neuron_support.demo import build_demo
    from neuron_support.hub import hub_server, hub_env
    scratch = Path(tempfile.mkdtemp(prefix="vision-bench-"))
    with open(scratch / "hub.log", "w") as log, hub_server(build_demo(), stderr=log) as endpoint:
        env = {**os.environ, **hub_env(endpoint, scratch / "hf-home"), "OMP_NUM_THREADS": "1"}
        folder = scratch / "run"; folder.mkdir()
        spec = json.loads(subprocess.run([sys.executable, "-c", RENDER, a.model, str(folder)], capture_output=True, text=True, env=env, check=True).stdout)
        floor_round(spec, env); run_py_round(folder, env)   # warm-up: the Hub cache and the page cache
        rounds = [(floor_round(spec, env), run_py_round(folder, env)) for _ in range(a.repeat)]
    med = lambda which, key: statistics.median(r[which][key] for r in rounds)
    fig = {"model": a.model, "runner": spec["runner"], "rounds": rounds,
           "floor": {k: med(0, k) for k in ("process_wall_s", "compile_s", "warm_s")},
           "run_py": {k: med(1, k) for k in ("wall_s", "compile_s", "warm_s")}}
    fig["ratio_wall"] = fig["run_py"]["wall_s"] / fig["floor"]["process_wall_s"]
    print(f"{a.model} ({spec['runner']}), median of {a.repeat}:")
    print(f"  floor  : wall {fig['floor']['process_wall_s']:.1f} s, compile {fig['floor']['compile_s']:.2f} s, warm {fig['floor']['warm_s'] * 1000:.1f} ms")
    print(f"  run.py : wall {fig['run_py']['wall_s']:.1f} s, compile {fig['run_py']['compile_s']:.2f} s, warm {fig['run_py']['warm_s'] * 1000:.1f} ms"
          f" ({', '.join(r[1]['result'] for r in rounds)})")
    print(f"  run.py / floor (wall): {fig['ratio_wall']:.2f}")
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "vision_runner.json").write_text(json.dumps(fig, indent=1))


if __name__ == "__main__":
    main()
