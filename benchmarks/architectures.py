"""Architecture coverage (issue 18, item 4): every architecture of the installed transformers that a runner serves,
as a tiny random checkpoint, run through the real plan and `run.py` on this machine's device.

    python benchmarks/architectures.py --list                                  # what would run, by runner
    python benchmarks/architectures.py --runner run_dense --limit 20           # the next 20 causal LMs (a chunk)
    python benchmarks/architectures.py --only llama,mamba,gpt2 --backend aot_eager
    python benchmarks/architectures.py --summary                               # the table's counts, skips, failures

The architectures come from transformers' auto mappings: causal LMs (`MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`) for
run_dense, encoder-decoders (`MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES`) for run_seq2seq, image-text-to-text models
for run_multimodal, and, for run_encoder, every text encoder (a model type with a masked-LM class that is not an
encoder-decoder) with each head the plan serves: masked LM, token and sequence classification, question answering,
and the bare model. The runner in the table is the one the plan chose from the checkpoint's config, which may differ
from the class the architecture was enumerated for (a MoE may go to run_dense_ep, a `...LMHeadModel` to run_dense).

Each checkpoint starts from its config class's defaults with the usual size keys shrunk (the demo's `TINY` widths,
two layers, four experts, the tokenizer's vocabulary; sub-configs such as text_config and vision_config too), random
weights from a seed derived from its name, saved in bf16 with the demo's tokenizers (SmolLM2's BPE for decoders and
encoder-decoders, MiniLM's WordPiece for encoders) under `$NEURON_SUPPORT_CACHE/architectures/<model_type>/<class>`.
A config that cannot be made tiny, or a model that cannot be built or saved, is a SKIP row with the reason: no run.

Each run is `make_plan` on that folder, `render_run_py`, and `python3 run.py` (`execute_run_py`) with a time limit,
in `$NEURON_SUPPORT_CACHE/architectures/runs/<pair>/<model_type>--<class>/` (run.py and its output in log.txt).
The table (CSV, one file per stack: benchmarks/results/architectures-<pair>.csv) is rewritten after every row, so
a run cut short keeps what it measured; a second invocation skips the architectures already in it (`--redo` reruns
them): run it in chunks with `--limit`.
"""
import argparse, csv, inspect, io, json, os, re, sys, time, traceback
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the checkpoints are local folders; nothing is downloaded

RUNNER_GROUPS = ("run_dense", "run_seq2seq", "run_multimodal", "run_encoder") # what --runner picks: the class an architecture is enumerated for
COLUMNS = ("model_type", "architecture", "group", "runner", "result", "cpu_eager", "settings", "graph_breaks", "graph_break", "error_signature", "notes",
           "wall_s", "build_s", "params", "backend", "tested_at")
BUILD_VERSION = "2" # bump when the tiny configs change: the checkpoints are rebuilt
MAX_PARAMS = 30_000_000 # a "tiny" checkpoint above this was not made tiny (a size key this script does not know)

# The size keys, by what they mean: every alias a config class may use for it (a key is set only where the config has it).
WIDTH = ("hidden_size", "d_model", "n_embd", "n_embed", "dim", "embed_dim", "model_dim", "d_embed", "embedding_size", "emb_dim",
         "embedding_dim", "word_embed_proj_dim", "input_embedding_size", "output_embedding_size")
FFN = ("intermediate_size", "ffn_dim", "d_ff", "n_inner", "encoder_ffn_dim", "decoder_ffn_dim", "ffn_hidden_size", "hidden_dim",
       "d_inner")
LAYERS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "encoder_layers", "decoder_layers", "num_decoder_layers",
          "num_encoder_layers")
HEADS = ("num_attention_heads", "n_head", "num_heads", "n_heads", "encoder_attention_heads", "decoder_attention_heads")
SIZES = {**dict.fromkeys(WIDTH, 64), **dict.fromkeys(FFN, 128), **dict.fromkeys(LAYERS, 2), **dict.fromkeys(HEADS, 4),
         **dict.fromkeys(("num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num"), 2),
         **dict.fromkeys(("head_dim", "d_kv", "d_head", "kv_channels", "attention_head_dim"), 16),
         **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"), 4),
         **dict.fromkeys(("moe_intermediate_size", "expert_intermediate_size"), 32),
         "shared_expert_intermediate_size": 64, "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1,
         "mamba_n_heads": 8, "mamba_d_head": 16, "mamba_n_groups": 1, "mamba_d_ssm": 128, "kv_lora_rank": 32, "q_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16}
AT_MOST = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "num_experts_per_tok", "n_group",
           "topk_group") # lowered to their SIZES, never raised (one expert stays one)
MAX_POSITIONS = 2048 # learned position tables are cut to this; a run's prompt and 32 new tokens need far less
CAPPED = ("max_position_embeddings", "n_positions", "n_ctx")

# Per model type: what the generic shrinking gets wrong (found by running it), as config keys.
OVERRIDES = {
    "jamba": dict(attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=1, use_mamba_kernels=False),
    "mamba2": dict(num_heads=8, head_dim=16, n_groups=1, expand=2),
    "bamba": dict(attn_layer_indices=[1]),  # its defaults have no attention layer, which generate refuses; its checkpoints have some
    "granitemoehybrid": dict(layer_types=["linear_attention", "full_attention"]),  # the same: real Granite 4 hybrids mix both
}


# ---------------------------------------------------------------- enumeration

def architectures(groups=RUNNER_GROUPS)->list: # [(group, model_type, class name)], in the mappings' order
    "Every architecture of the installed transformers in the runner classes `groups`."
    import transformers
    from transformers.models.auto import modeling_auto as m
    seq2seq = m.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES
    found = {"run_dense": list(m.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items()), "run_seq2seq": list(seq2seq.items()),
             "run_multimodal": list(m.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.items())}
    encoders = [mt for mt in m.MODEL_FOR_MASKED_LM_MAPPING_NAMES if mt not in seq2seq]
    heads = (m.MODEL_FOR_MASKED_LM_MAPPING_NAMES, m.MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES,
             m.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES, m.MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES, m.MODEL_MAPPING_NAMES)
    found["run_encoder"] = [(mt, h[mt]) for mt in encoders for h in heads if mt in h]
    out = []
    for g in groups:
        for mt, cls in found[g]:
            for name in (cls if isinstance(cls, (list, tuple)) else [cls]):
                if hasattr(transformers, name): out.append((g, mt, name))
    return out


# ---------------------------------------------------------------- tiny configs

def layer_plan(d:dict)->tuple: # (number of layers, {key: shortened per-layer list})
    "Two layers, or one of each kind where the config lists its layers' kinds (a hybrid keeps every kind)."
    n_default = next((d[k] for k in LAYERS if isinstance(d.get(k), int)), None)
    kinds = list(dict.fromkeys(d["layer_types"])) if isinstance(d.get("layer_types"), list) else []
    n = max(2, len(kinds))
    lists = {}
    for k, v in d.items():
        if not isinstance(v, list) or n_default is None or len(v) != n_default or not v: continue
        if k == "layer_types" or all(isinstance(x, str) for x in v):
            kept = list(dict.fromkeys(v)); lists[k] = (kept * n)[:n]
        else: lists[k] = v[:n]
    return n, lists

def shrink(d:dict, vocab:dict)->dict:
    "A config dict (config.json's form) with its size keys made tiny, its sub-configs too."
    d = dict(d)
    n, lists = layer_plan(d)
    for k, v in SIZES.items():  # a size the defaults leave None (derived, or unset) is set too, but an absent MoE stays absent
        if k in d and (d[k] is None and k not in AT_MOST or isinstance(d[k], int) and not isinstance(d[k], bool)):
            d[k] = n if k in LAYERS else min(v, d[k]) if k in AT_MOST else v
    d.update(lists)
    for k in CAPPED:
        if isinstance(d.get(k), int) and d[k] > MAX_POSITIONS: d[k] = MAX_POSITIONS
    for k in [k for k in d if k.endswith("_layer_period")]:
        off = k.replace("_period", "_offset")
        if isinstance(d[k], int) and d[k] > 2: d[k] = 2; d[off] = min(d.get(off, 1) or 0, 1)
    if isinstance(d.get("per_layer_config"), dict) and d["per_layer_config"]:  # overrides of some layers: the first one, on the last layer
        d["per_layer_config"] = {n - 1: next(iter(d["per_layer_config"].values()))}
    if isinstance(d.get("first_k_dense_replace"), int): d["first_k_dense_replace"] = min(d["first_k_dense_replace"], 1)
    if "vocab_size" in d:  # an encoder-decoder's start token too, which its generation needs and its defaults may not hold
        d.update({k: v for k, v in vocab.items() if k in d or k == "vocab_size" or k == "decoder_start_token_id" and d.get("is_encoder_decoder")})
    for k, v in list(d.items()):
        if isinstance(v, dict) and "model_type" in v: d[k] = shrink(v, vocab)  # text_config, vision_config, encoder, decoder...
    return {**d, **OVERRIDES.get(d.get("model_type"), {})}

def tokenizer_ids(tok)->dict:
    "The token ids a config takes from its tokenizer (the demo's `decoder_ids`, and an encoder-decoder's start token)."
    from neuron_support.demo import decoder_ids
    return {**decoder_ids(tok), "decoder_start_token_id": tok.pad_token_id if tok.pad_token_id is not None else tok.bos_token_id}

def tiny_config(model_type:str, arch:str, tok, head_kwargs:dict, decoder:bool=False):
    "The defaults of the config class `arch` takes, shrunk, declaring `arch`, over `tok`'s vocabulary."
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    cls = getattr(getattr(transformers, arch), "config_class", None) or CONFIG_MAPPING[model_type]  # a text model of a composite type takes its text config
    d = shrink({k: v for k, v in cls().to_dict().items() if k not in ("transformers_version", "architectures")}, tokenizer_ids(tok))
    if decoder and "is_decoder" in d: d["is_decoder"] = True  # an encoder's causal-LM class (BertLMHeadModel) wants it, as its checkpoints have it
    return cls(**{**d, "architectures": [arch], **head_kwargs})


# ---------------------------------------------------------------- checkpoints

def head_kwargs(arch:str)->dict:
    "Labels for a classification head (the demo's NER labels for token classification)."
    from neuron_support.demo import labels, NER_LABELS
    if arch.endswith("ForTokenClassification"): return labels(NER_LABELS)
    if arch.endswith("ForSequenceClassification"): return labels(["NEGATIVE", "POSITIVE"])
    return {}

def text_tokenizer(group:str):
    "The demo's tokenizers: MiniLM's WordPiece for encoders (it has [MASK]), SmolLM2's BPE with its chat template for the rest."
    from neuron_support.demo import bpe_tokenizer, wordpiece_tokenizer, build_demo
    return wordpiece_tokenizer() if group == "run_encoder" else bpe_tokenizer(build_demo())

def multimodal_processor(model_type:str, tok):
    "The model type's processor, built from its image processor's defaults and SmolLM2's tokenizer with the image tokens it names."
    import transformers
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING_NAMES
    from neuron_support.demo import image_chat_template
    pname, inames = PROCESSOR_MAPPING_NAMES.get(model_type), IMAGE_PROCESSOR_MAPPING_NAMES.get(model_type)
    if not pname or not inames: raise LookupError(f"no processor or image processor registered for {model_type}")
    inames = [inames] if isinstance(inames, str) else list(inames.values()) if isinstance(inames, dict) else [n for n in inames if n]
    icls = next((getattr(transformers, n) for n in inames if hasattr(transformers, n)), None)
    if icls is None: raise LookupError(f"image processor {inames} not in transformers")
    pcls = getattr(transformers, pname)
    probe = pcls(image_processor=icls(), tokenizer=tok)  # what image token the processor uses by default
    image = getattr(probe, "image_token", None) or "<image>"
    special = {k: getattr(probe, k) for k in ("image_token", "boi_token", "eoi_token") if isinstance(getattr(probe, k, None), str)}
    from neuron_support.demo import bpe_tokenizer, build_demo
    tok = bpe_tokenizer(build_demo(), extra_special_tokens=special or {"image_token": image})
    return pcls(image_processor=icls(), tokenizer=tok, chat_template=image_chat_template(image))

def image_token_ids(proc)->dict:
    "The config keys that name the image tokens, from the processor's tokenizer."
    tok, out = proc.tokenizer, {}
    ids = {k: tok.convert_tokens_to_ids(getattr(proc, k)) for k in ("image_token", "boi_token", "eoi_token") if isinstance(getattr(proc, k, None), str)}
    if "image_token" in ids: out.update(image_token_id=ids["image_token"], image_token_index=ids["image_token"])
    if "boi_token" in ids: out.update(boi_token_id=ids["boi_token"], boi_token_index=ids["boi_token"])
    if "eoi_token" in ids: out.update(eoi_token_id=ids["eoi_token"], eoi_token_index=ids["eoi_token"])
    return out

def forward_inputs(model_cls)->list:
    "The text inputs the model's forward takes, for the tokenizer's `model_input_names`."
    params = inspect.signature(model_cls.forward).parameters
    return [n for n in ("input_ids", "token_type_ids", "attention_mask") if n in params or "kwargs" in params and n != "token_type_ids"]

def build_checkpoint(group:str, model_type:str, arch:str, dest:Path)->dict: # {"params": n} or {"skip": reason}
    "A tiny random checkpoint of `arch` in `dest` (kept and reused while BUILD_VERSION and transformers are the same)."
    import torch, transformers
    from neuron_support.demo import save_tiny
    stamp = dest / ".architectures-build"
    version = f"{BUILD_VERSION} transformers-{transformers.__version__}"
    if stamp.exists():
        done = json.loads(stamp.read_text())
        if done.get("version") == version: return done
    tok = text_tokenizer(group)
    model_cls = getattr(transformers, arch)
    extra = head_kwargs(arch)
    try:
        proc = multimodal_processor(model_type, tok) if group == "run_multimodal" else tok
        if group == "run_multimodal": tok, extra = proc.tokenizer, {**extra, **image_token_ids(proc)}
        config = tiny_config(model_type, arch, tok, extra, decoder=group == "run_dense")
        if group == "run_multimodal" and hasattr(config, "text_config"):  # the text model's vocabulary holds the image tokens
            for k, v in tokenizer_ids(tok).items():
                if hasattr(config.text_config, k): setattr(config.text_config, k, v)
        with torch.device("meta"): n = sum(p.numel() for p in model_cls(config).parameters())
        if n > MAX_PARAMS: raise ValueError(f"config not made tiny: {n / 1e6:.0f}M parameters")
        if group != "run_multimodal": tok.model_input_names = forward_inputs(model_cls)
        dest.mkdir(parents=True, exist_ok=True)
        save_tiny(dest, model_cls, config, proc)
        done = {"version": version, "params": n}
    except Exception as e:
        done = {"version": version, "skip": f"{type(e).__name__}: {e}".strip().splitlines()[0][:300]}
        dest.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(done))
    return done


# ---------------------------------------------------------------- runs and the table

def read_table(path:Path)->dict: # {(model_type, architecture): row}
    "The table's rows, by architecture."
    if not path.exists(): return {}
    with open(path, newline="") as f: return {(r["model_type"], r["architecture"]): r for r in csv.DictReader(f)}

def write_table(path:Path, rows:dict):
    "The table, rewritten whole (atomically) in enumeration order."
    from neuron_support.stack import write_atomic
    buf = io.StringIO()
    w = csv.DictWriter(buf, COLUMNS, extrasaction="ignore"); w.writeheader()
    for r in rows.values(): w.writerow(r)
    write_atomic(path, buf.getvalue())

def run_one(folder:Path, run_dir:Path, stack, time_limit:float, max_new_tokens:int)->tuple: # (outcome, plan or None)
    "The plan of the checkpoint, its run.py rendered into `run_dir`, and run with a time limit; the outcome run.py printed."
    from neuron_support.libraries import make_plan
    from neuron_support.script import render_run_py, execute_run_py
    from neuron_support.stack import write_atomic
    plan = make_plan(str(folder), None, stack, max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens)  # random weights: no early EOS
    write_atomic(run_dir / "run.py", render_run_py(plan, stack, time_limit=time_limit))
    with open(run_dir / "log.txt", "w") as log:
        outcome = execute_run_py(run_dir, 2 * time_limit, echo=lambda line: print(line, file=log, flush=True))
    (run_dir / "outcome.json").write_text(json.dumps(outcome, indent=1, default=str))
    return outcome, plan

def measure(group:str, model_type:str, arch:str, root:Path, stack, a)->dict:
    "One row: build the checkpoint, then plan and run it (or a SKIP row saying why not)."
    from neuron_support.publish import error_signature
    from neuron_support.stack import pair_key, utc_now
    row = {"model_type": model_type, "architecture": arch, "group": group, "backend": stack.backend, "tested_at": utc_now()}
    folder = root / model_type / arch
    t = time.time()
    built = build_checkpoint(group, model_type, arch, folder)
    row["build_s"] = round(time.time() - t, 1)
    if "skip" in built: return {**row, "result": "SKIP", "notes": built["skip"], "runner": ""}
    row["params"] = built["params"]
    run_dir = root / "runs" / pair_key(stack) / f"{model_type}--{arch}"
    run_dir.mkdir(parents=True, exist_ok=True)
    t = time.time()
    try: outcome, plan = run_one(folder, run_dir, stack, a.time_limit, a.max_new_tokens)
    except Exception as e:  # the plan refused it (a UsageError), or the harness broke before run.py
        msg = f"{type(e).__name__}: {e}"
        outcome, plan = {"result": "FAIL(plan)", "notes": msg.splitlines()[0][:200], "error": msg + "\n" + traceback.format_exc()}, None
    error = outcome.get("error") or ""
    return {**row, "runner": plan.runner if plan else "", "result": outcome["result"], "wall_s": round(time.time() - t, 1),
            "cpu_eager": outcome.get("cpu_eager") or "", "settings": outcome.get("settings") or "",
            "graph_breaks": "" if outcome.get("graph_breaks") is None else outcome["graph_breaks"], "graph_break": outcome.get("graph_break") or "",
            "error_signature": error_signature(error, str(folder)) if error else "", "notes": (outcome.get("notes") or "")[:200]}

def settings_of(r:dict)->str:
    "The settings a row's run took: its `settings`, or (a row of an older table) what its notes say."
    from neuron_support.core import SETTINGS
    if r.get("settings"): return r["settings"]
    return next((k for k, v in SETTINGS.items() if k != "card" and str(r.get("notes", "")).startswith(f"({v}:")), "card")

def harness_failures(rows:list, device:str)->list:
    "FAIL rows whose CPU eager run was fine with the card's settings while no device was involved: the harness's own (none expected on the CPU)."
    return [r for r in rows if device == "cpu" and r["result"].startswith("FAIL") and str(r.get("cpu_eager", "")).lower().startswith("ok")
            and settings_of(r) == "card"]

def closest_settings_failures(rows:list)->list:
    "FAIL rows that ran with the closest settings the CPU accepted (transformers refused the card's) and still failed compiled."
    return [r for r in rows if r["result"].startswith("FAIL") and settings_of(r) != "card"]

def summary(rows:list, device:str)->str:
    "Counts by runner and result, the skips, the harness failures, and the commonest error signatures."
    out = []
    results = sorted({r["result"] for r in rows})
    runners = sorted({r["runner"] or "-" for r in rows})
    by = Counter((r["runner"] or "-", r["result"]) for r in rows)
    out.append("| runner | " + " | ".join(results) + " | total |")
    out.append("|---" * (len(results) + 2) + "|")
    for rn in runners:
        out.append(f"| {rn} | " + " | ".join(str(by[rn, res] or "") for res in results) + f" | {sum(by[rn, res] for res in results)} |")
    out.append(f"| all | " + " | ".join(str(sum(by[rn, res] for rn in runners)) for res in results) + f" | {len(rows)} |")
    skips = [r for r in rows if r["result"] == "SKIP"]
    out.append(f"\nskipped (the checkpoint could not be built tiny): {len(skips)}")
    out += [f"  {r['model_type']} {r['architecture']}: {r['notes'][:150]}" for r in skips]
    hf = harness_failures(rows, device)
    out.append(f"\nharness failures (FAIL while cpu_eager is ok, device {device}): {len(hf)}")
    out += [f"  {r['model_type']} {r['architecture']} {r['result']}: {r['error_signature'][:150]}" for r in hf]
    cs = closest_settings_failures(rows)
    out.append(f"\nfailures with the closest settings (transformers refused the card's on the CPU; compiled, they fail): {len(cs)}")
    out += [f"  {r['model_type']} {r['architecture']} {r['result']}: {r['error_signature'][:150]}" for r in cs]
    sigs = Counter((r["result"], r["error_signature"][:160]) for r in rows if r["result"].startswith("FAIL"))
    out.append("\nerror signatures, commonest first:")
    out += [f"  {n:3d}  {res}  {sig}" for (res, sig), n in sigs.most_common()]
    return "\n".join(out)

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runner", default=",".join(RUNNER_GROUPS), help=f"runner classes to enumerate, a comma list of {', '.join(RUNNER_GROUPS)}")
    ap.add_argument("--only", default="", help="a comma list of model types, or model_type:Class for one head (default: all)")
    ap.add_argument("--limit", type=int, default=0, help="run at most N architectures not yet in the table, then stop (a chunk; 0: all)")
    ap.add_argument("--redo", action="store_true", help="rerun architectures already in the table")
    ap.add_argument("--device", default="cpu", help="neuron, cuda or cpu")
    ap.add_argument("--backend", default=None, help="compile backend (default: the device's own)")
    ap.add_argument("--time-limit", type=float, default=300, help="seconds for a run's ranks (run.py is killed at twice this)")
    ap.add_argument("--max-new-tokens", type=int, default=32, help="tokens a generation makes (all of them: random weights)")
    ap.add_argument("--table", type=Path, default=None, help="the CSV (default: benchmarks/results/architectures-<pair>.csv)")
    ap.add_argument("--list", action="store_true", help="print the architectures by runner class and stop")
    ap.add_argument("--summary", action="store_true", help="print the table's summary and stop")
    ap.add_argument("--merge", type=Path, nargs="+", default=[], metavar="CSV",
                    help="fold these tables (parts run at once with --table, reruns) into the table, the later row of an architecture winning, and stop")
    a = ap.parse_args(argv)
    groups = [g for g in a.runner.split(",") if g]
    if bad := set(groups) - set(RUNNER_GROUPS): ap.error(f"unknown runner class {', '.join(sorted(bad))}")
    todo = architectures(groups)
    if a.only: todo = [t for t in todo if {t[1], f"{t[1]}:{t[2]}"} & set(a.only.split(","))]
    if a.list:
        for g in groups: print(f"{g}: {sum(t[0] == g for t in todo)} architectures, {len({t[1] for t in todo if t[0] == g})} model types")
        for t in todo: print(*t)
        return
    import transformers
    from neuron_support.stack import detect_stack, pair_key
    from neuron_support.demo import demo_dir
    transformers.utils.logging.disable_progress_bar(); transformers.utils.logging.set_verbosity_error()
    stack = detect_stack(a.device, a.backend)
    table = a.table or Path(__file__).parent / "results" / f"architectures-{pair_key(stack).replace('/', '-')}.csv"
    rows = read_table(table)
    if a.merge:
        for part in a.merge: rows.update(read_table(part))
        return write_table(table, rows)
    if a.summary: return print(f"{table}: {len(rows)} rows\n" + summary(list(rows.values()), stack.device))
    root = demo_dir().parent / "architectures"
    pending = [t for t in todo if a.redo or (t[1], t[2]) not in rows]
    if a.limit: pending = pending[:a.limit]
    print(f"{len(todo)} architectures in {', '.join(groups)}; {len(todo) - len(pending)} done or left for later; "
          f"running {len(pending)} on {stack.device} ({stack.backend}) into {table}", flush=True)
    start = time.time()
    for i, (g, mt, arch) in enumerate(pending, 1):
        t = time.time()
        row = measure(g, mt, arch, root, stack, a)
        rows[mt, arch] = row
        write_table(table, rows)
        print(f"[{i}/{len(pending)}] {mt:<24} {arch:<44} {row['runner'] or '-':<14} {row['result']:<13} {time.time() - t:6.1f} s  "
              f"{row['notes'][:70]}", flush=True)
    print(f"\n{len(pending)} runs in {time.time() - start:.0f} s; the table ({len(rows)} rows):\n" + summary(list(rows.values()), stack.device))


if __name__ == "__main__":
    main()
