"""How much damage the output checks catch: each checkpoint run intact, with noise on its weights and with its 2-D
weights flipped (run.py's test hook `perturb`), through the real plan and run.py on the CPU; the share of damaged runs
that are FAIL(output), by group, and the intact runs that are not PASS.

    python benchmarks/check_power.py [--out results/check_power.json] [--only NAME ...] [--parallel 2]

The checkpoints: the demo catalog's tiny models of transformers' runners (built by `neuron-support demo`), the
architecture table's builder's tiny checkpoints of a dozen types (built on first use, under the demo's cache), and the
demo's checkpoints of the other libraries (sentence-transformers' embedders and cross-encoder with the real
all-MiniLM-L6-v2, diffusers' pipelines, timm's classifiers), each run as its library's. Run it
with another checkout's package first on the path (`PYTHONPATH=/other/checkout python benchmarks/check_power.py`) to
measure that code: the script only calls `make_plan` and `execute_plan`, which every version has.
"""
import argparse, concurrent.futures, json, os, sys, tempfile, time
from pathlib import Path

DEMO = ["tiny-llama", "tiny-qwen3", "tiny-gpt2", "tiny-t5", "tiny-bart", "tiny-bert-mlm", "tiny-bert-ner", "tiny-bert-qa",
        "tiny-distilbert-sentiment", "tiny-deberta-nli", "tiny-roberta-mlm", "tiny-vit", "tiny-whisper", "tiny-wav2vec2-ctc", "tiny-ast"]
BUILT = ["llama:LlamaForCausalLM", "qwen2:Qwen2ForCausalLM", "gpt_neox:GPTNeoXForCausalLM", "mistral:MistralForCausalLM",
         "bert:BertForSequenceClassification", "bert:BertForTokenClassification", "roberta:RobertaForSequenceClassification",
         "electra:ElectraForTokenClassification", "vit:ViTForImageClassification", "convnext:ConvNextForImageClassification",
         "bert:BertModel", "convnext:ConvNextModel",
         "t5:T5ForConditionalGeneration", "wav2vec2:Wav2Vec2ForCTC", "whisper:WhisperForConditionalGeneration"]
OTHERS = {"sentence-transformers": ["tiny-st-dense", "tiny-st-cls", "tiny-cross-encoder", "all-MiniLM-L6-v2"],
          "diffusers": ["tiny-sd", "tiny-sd3", "tiny-sd-vae-attention"],
          "timm": ["tiny-timm-resnet", "tiny-timm-vit", "tiny-timm-convnext"]}   # the demo's checkpoints of the other libraries
GROUPS = {"run_dense": "causal LM", "run_seq2seq": "seq2seq", "run_encoder": "text encoder", "run_image_classifier": "image classifier",
          "run_speech_seq2seq": "speech", "run_ctc": "speech", "run_audio_classifier": "audio classifier",
          "run_sentence_embedding": "st embedding", "run_cross_encoder": "st cross-encoder", "run_text_to_image": "diffusers",
          "run_timm_classifier": "timm classifier", "run_timm_encoder": "timm encoder", "run_image_encoder": "image backbone"}
DAMAGE = ("", "noise", "swap")


def checkpoints(only:list|None)->dict: # {name: (library, folder)}
    "The demo's checkpoints and the builder's, as local folders, each with the library it runs as."
    from neuron_support.demo import build_demo
    from neuron_support.architectures import build_checkpoints
    models = Path(build_demo()) / "models"
    found = {n: ("transformers", str(models / "neuron-support-demo" / n)) for n in DEMO}
    found |= {n: (lib, str(next(models.glob(f"*/{n}")))) for lib, names in OTHERS.items() for n in names}
    if not only or set(only) & set(BUILT):
        for e in build_checkpoints("transformers", BUILT, say=lambda line: None):
            if "folder" in e: found[f"{e['model_type']}:{e['class']}"] = ("transformers", e["folder"])
    return {n: f for n, f in found.items() if not only or n in only}


def one_run(name:str, library:str, folder:str, damage:str, scratch:str)->dict:
    "One run of a checkpoint as its library's, damaged or not: its result, cpu_match and runner."
    from neuron_support.registry import make_plan, library_stack
    from neuron_support.script import execute_plan
    stack = library_stack(library, "cpu")
    plan = make_plan(folder, stack=stack, max_new_tokens=8, min_new_tokens=8)
    run_dir = Path(scratch) / f"{name.replace(':', '-')}-{damage or 'intact'}"
    start = time.time()
    outcome, _, _ = execute_plan(plan, stack, run_dir, time_limit=600, perturb=damage, reference_cache=Path(scratch) / "refs", echo=lambda line: None)
    return {"name": name, "damage": damage or "intact", "runner": plan.runner, "group": GROUPS.get(plan.runner, plan.runner),
            "result": outcome.get("result"), "cpu_match": outcome.get("cpu_match"), "check": outcome.get("check"), "wall_s": round(time.time() - start, 1)}


def summary(rows:list)->str:
    "Per group: intact runs that pass, damaged runs caught (FAIL(output)), noise and swap."
    lines = [f"{'group':18} {'checkpoints':>11} {'intact PASS':>11} {'noise caught':>13} {'swap caught':>12}"]
    groups = sorted({r["group"] for r in rows}) + ["all"]
    for g in groups:
        rs = [r for r in rows if g == "all" or r["group"] == g]
        n = len({r["name"] for r in rs})
        share = lambda d, want: f"{sum(r['result'] == want for r in rs if r['damage'] == d)}/{sum(r['damage'] == d for r in rs)}"
        lines.append(f"{g:18} {n:>11} {share('intact', 'PASS'):>11} {share('noise', 'FAIL(output)'):>13} {share('swap', 'FAIL(output)'):>12}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "check_power.json"))
    ap.add_argument("--only", nargs="+", help="these checkpoints only (a demo name or model_type:Class)")
    ap.add_argument("--parallel", type=int, default=2, help="runs at a time")
    ap.add_argument("--label", default="", help="what the results are of (a commit), kept with them")
    a = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1"); os.environ.setdefault("HF_HUB_OFFLINE", "1")
    found = checkpoints(a.only)
    scratch = tempfile.mkdtemp(prefix="check-power-")
    jobs = [(n, lib, f, d) for n, (lib, f) in found.items() for d in DAMAGE]
    rows = []
    with concurrent.futures.ThreadPoolExecutor(a.parallel) as pool:
        for row in pool.map(lambda j: one_run(*j, scratch), jobs):
            rows.append(row)
            print(f"{row['name']:42} {row['damage']:7} {row['result']:13} {str(row['cpu_match'])[:70]}", flush=True)
    print("\n" + summary(rows))
    Path(a.out).write_text(json.dumps({"label": a.label, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
