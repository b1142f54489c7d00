"""One vision, speech or forecasting run against a hand-written torch.compile of the same model: compile, warm latency and wall, on this machine.

    python benchmarks/runner_floor.py [--models neuron-support-demo/tiny-vit neuron-support-demo/tiny-whisper] [--repeat 2]
    python benchmarks/runner_floor.py --models timm:neuron-support-demo/tiny-timm-vit --out runner_floor_timm.json
    python benchmarks/runner_floor.py --models neuron-support-demo/tiny-segformer-ade neuron-support-demo/tiny-dpt-depth --out runner_floor_dense.json
    python benchmarks/runner_floor.py --models neuron-support-demo/tiny-yolos neuron-support-demo/tiny-owlv2 neuron-support-demo/tiny-mask2former-ade --out runner_floor_detection.json
    python benchmarks/runner_floor.py --models neuron-support-demo/tiny-patchtst neuron-support-demo/tiny-vit --out runner_floor_forecast.json

(a) the floor: one `python -c` process doing the run's work by hand: import torch and transformers, find the checkpoint in
    the Hub cache, load it in bf16 with its processor, the input through the processor (the photograph, or the clip), and
    for an image classifier `torch.compile(model, backend=aot_eager, fullgraph=True, dynamic=False)`, a first (compiling)
    and a warm forward pass, then the CPU's fp32 and bf16 references (eager); for a Whisper the encoder compiled and run
    once, the forward compiled for the decoder, 32 tokens greedy with a static cache, first and warm, then the CPU's fp32
    greedy transcript (eager); for a timm model (`timm:ID`) what timm's users write: `timm.create_model("hf-hub:ID",
    pretrained=True)` in bf16, the photograph through `create_transform(**resolve_data_config(model=model))`, the model
    compiled the same way, a first and a warm forward pass, then the fp32 and bf16 references (eager); for a semantic
    segmenter or a depth estimator, as for an image classifier but compiled as its users would, graph breaks allowed
    (SegFormer's and DPT's forward take a lock dynamo cannot trace whole: run.py tries whole first, then compiles again);
    for an object detector, a zero-shot detector (its processor with the text queries) or a universal segmenter the same,
    the floor's answer the boxes its users keep (their labels, within 2 % of the image) or the map its queries make;
    for a forecaster, the fixed series as `past_values`, compiled whole, its forecast in units of the series' spread held
    within twice bf16's distance to fp32's (eager);
(b) `python3 run.py` of the same plan in a run folder (its own rank process, the check, the photograph saved).
Each figure is the median of --repeat rounds after a warm-up round that fills the Hugging Face cache; every round gets a
fresh, empty reference cache, so run.py computes its references as the floor does. One torch thread each
(OMP_NUM_THREADS=1), the demo catalog on a local Hub. Figures to stdout and to benchmarks/results/runner_floor.json.
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent

VISION_FLOOR = r'''
import json, sys, time
t0 = time.time()
import torch, transformers
from huggingface_hub import snapshot_download
from neuron_support.photo import photo
from neuron_support.facts import DETECTION_QUERIES
spec = json.loads(sys.argv[1])
path = snapshot_download(spec["model_id"], revision=spec["revision"] or None)
cls = getattr(transformers, spec["head_class"])
runner = spec["runner"]
zero_shot = runner == "run_zero_shot_detection"
proc = (transformers.AutoProcessor if runner in ("run_zero_shot_detection", "run_universal_segmentation") else transformers.AutoImageProcessor).from_pretrained(path)
model = cls.from_pretrained(path, dtype=torch.bfloat16).eval()
x = {k: v for k, v in proc(images=photo(), return_tensors="pt", **({"text": [list(DETECTION_QUERIES)]} if zero_shot else {})).items() if isinstance(v, torch.Tensor)}
dev = {k: v.to(torch.bfloat16) if v.is_floating_point() else v for k, v in x.items()}
classifier = runner == "run_image_classifier"   # a dense model's forward takes a lock dynamo cannot trace whole (SegFormer's, DPT's): compiled as its users would, graph breaks allowed
fwd = torch.compile(model, backend="aot_eager", fullgraph=classifier, dynamic=False)
def output(out):   # what its users read: a depth map, a class for each pixel (a universal segmenter's from its queries' classes and masks), boxes and their scores, logits
    if runner == "run_depth_estimation": return out.predicted_depth[0].float()
    if runner == "run_universal_segmentation": return torch.einsum("qc,qhw->chw", out.class_queries_logits[0].float().softmax(-1)[:, :-1], out.masks_queries_logits[0].float().sigmoid())
    if runner.endswith("_detection"): return torch.cat([(out.logits[0].float().sigmoid() if zero_shot else out.logits[0].float().softmax(-1)[:, :-1]), out.pred_boxes[0].float()], -1)
    return out.logits[0].float()
def kept(o):   # the boxes its users keep (the pipelines' thresholds), each with its label and box
    scores, labels = o[:, :-4].max(-1)
    q = (scores >= (0.1 if zero_shot else 0.5)).nonzero()[:, 0]
    return q.tolist(), labels[q].tolist(), o[q, -4:]
with torch.inference_mode():
    t = time.time(); fwd(**dev); first = time.time() - t
    t = time.time(); out = output(fwd(**dev)); warm = time.time() - t
refs = []
for dtype in (torch.float32, torch.bfloat16):
    ref = cls.from_pretrained(path, dtype=dtype, attn_implementation="eager").eval()
    with torch.inference_mode(): refs.append(output(ref(**{k: v.to(dtype) if v.is_floating_point() else v for k, v in x.items()})))
error = lambda t: float((t - refs[0]).norm() / refs[0].norm())
if classifier: equal = int(out.argmax()) == int(refs[0].argmax())
elif runner == "run_depth_estimation": equal = error(out) <= 2 * error(refs[1])
elif runner.endswith("_detection"): equal = kept(out)[:2] == kept(refs[0])[:2] and bool((kept(out)[2] - kept(refs[0])[2]).abs().max() < 0.02)   # the same boxes kept, their labels, within 2 % of the image
else: equal = float(((out.argmax(0) == refs[0].argmax(0)) | (out.argmax(0) == refs[1].argmax(0))).float().mean()) >= 0.99   # fp32's or bf16's class at 99 % of the pixels
print(json.dumps({"first_s": first, "warm_s": warm, "compile_s": max(first - warm, 0.0), "wall_s": time.time() - t0, "equal": equal}))
'''

WHISPER_FLOOR = r'''
import functools, json, sys, time
t0 = time.time()
import torch, transformers
from huggingface_hub import snapshot_download
from neuron_support.libraries.transformers.audio import clip
spec = json.loads(sys.argv[1])
path = snapshot_download(spec["model_id"], revision=spec["revision"] or None)
proc = transformers.AutoProcessor.from_pretrained(path)
model = transformers.WhisperForConditionalGeneration.from_pretrained(path, dtype=torch.bfloat16).eval()
feats = proc.feature_extractor(clip().numpy(), sampling_rate=16000, return_tensors="pt").input_features
encoder = torch.compile(model.get_encoder(), backend="aot_eager", fullgraph=True, dynamic=False)
fwd = torch.compile(model.forward, backend="aot_eager", fullgraph=True, dynamic=False)
model.forward = functools.wraps(model.forward)(lambda *a, **k: fwd(*a, **k))
g = transformers.GenerationConfig(**model.generation_config.to_dict())
g.update(max_new_tokens=32, do_sample=False, num_beams=1, cache_implementation="static", disable_compile=True, return_timestamps=False)
g.language, g.task = "en", "transcribe"
gen = lambda: model.generate(encoder_outputs=encoder(input_features=feats.to(torch.bfloat16)), generation_config=g, return_dict_in_generate=True, output_scores=True)
with torch.inference_mode():
    t = time.time(); gen(); first = time.time() - t
    t = time.time(); out = gen(); warm = time.time() - t
ref = transformers.WhisperForConditionalGeneration.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()
g.cache_implementation = None
with torch.inference_mode(): r = ref.generate(input_features=feats, generation_config=g, return_dict_in_generate=True, output_scores=True)
n = len(out.scores)
print(json.dumps({"first_s": first, "warm_s": warm, "compile_s": max(first - warm, 0.0), "wall_s": time.time() - t0,
                  "equal": out.sequences[0, -n:].tolist() == r.sequences[0, -len(r.scores):].tolist()}))
'''
TIMM_FLOOR = r'''
import json, sys, time
t0 = time.time()
import torch, timm
from timm.data import resolve_data_config, create_transform
from neuron_support.photo import photo
spec = json.loads(sys.argv[1])
load = lambda dtype: timm.create_model(f"hf-hub:{spec['model_id']}@{spec['revision']}", pretrained=True).to(dtype).eval()
model = load(torch.bfloat16)
x = create_transform(**resolve_data_config(model=model))(photo()).unsqueeze(0)
fwd = torch.compile(model, backend="aot_eager", fullgraph=True, dynamic=False)
with torch.inference_mode():
    t = time.time(); fwd(x.to(torch.bfloat16)); first = time.time() - t
    t = time.time(); out = fwd(x.to(torch.bfloat16)); warm = time.time() - t
refs = []
for dtype in (torch.float32, torch.bfloat16):
    with torch.inference_mode(): refs.append(load(dtype)(x.to(dtype))[0].float())
print(json.dumps({"first_s": first, "warm_s": warm, "compile_s": max(first - warm, 0.0), "wall_s": time.time() - t0,
                  "equal": int(out[0].argmax()) == int(refs[0].argmax())}))
'''
FORECAST_FLOOR = r'''
import json, sys, time
t0 = time.time()
import torch, transformers
from huggingface_hub import snapshot_download
from neuron_support.libraries.transformers.time_series import fixed_series
spec = json.loads(sys.argv[1])
path = snapshot_download(spec["model_id"], revision=spec["revision"] or None)
cls = getattr(transformers, spec["head_class"])
model = cls.from_pretrained(path, dtype=torch.bfloat16).eval()
x = fixed_series(model.config.context_length, model.config.num_input_channels)[None]
fwd = torch.compile(model, backend="aot_eager", fullgraph=True, dynamic=False)
forecast = lambda out: ((out.prediction_outputs.float() - out.loc.float()) / out.scale.float())[0]   # in units of the series' spread
with torch.inference_mode():
    t = time.time(); fwd(past_values=x.to(torch.bfloat16)); first = time.time() - t
    t = time.time(); out = forecast(fwd(past_values=x.to(torch.bfloat16))); warm = time.time() - t
refs = []
for dtype in (torch.float32, torch.bfloat16):
    ref = cls.from_pretrained(path, dtype=dtype, attn_implementation="eager").eval()
    with torch.inference_mode(): refs.append(forecast(ref(past_values=x.to(dtype))))
rms = lambda t: float((t - refs[0]).pow(2).mean().sqrt())
print(json.dumps({"first_s": first, "warm_s": warm, "compile_s": max(first - warm, 0.0), "wall_s": time.time() - t0,
                  "equal": rms(out) <= max(2 * rms(refs[1]), 1e-3)}))
'''
FLOORS = {"run_image_classifier": VISION_FLOOR, "run_speech_seq2seq": WHISPER_FLOOR, "run_timm_classifier": TIMM_FLOOR, "run_forecast": FORECAST_FLOOR,
          **dict.fromkeys(("run_semantic_segmentation", "run_depth_estimation", "run_object_detection", "run_zero_shot_detection", "run_universal_segmentation"), VISION_FLOOR)}

RENDER = r'''
import json, sys
from pathlib import Path
from neuron_support.registry import make_plan, library_stack
from neuron_support.script import render_run_py
stack = library_stack(sys.argv[3], "cpu")
plan = make_plan(sys.argv[1], stack=stack)   # in a child: the Hub client reads HF_ENDPOINT when it is imported
(Path(sys.argv[2]) / "run.py").write_text(render_run_py(plan, stack))
print(json.dumps({"model_id": plan.model_id, "revision": plan.revision, "head_class": plan.head_class, "runner": plan.runner}))
'''


def run_py_round(folder: Path, env: dict) -> dict:
    t = time.time()
    p = subprocess.run([sys.executable, "run.py", "--reference-cache", tempfile.mkdtemp()], cwd=folder, capture_output=True, text=True, env=env)
    wall = time.time() - t
    outcome = json.loads(p.stdout.strip().splitlines()[-1])
    if m := re.search(r"forward pass done: .* ([\d.]+) ms warm", p.stderr): warm = float(m.group(1)) / 1000
    else: warm = len(outcome["tokens"]) / outcome["tokens_per_s"]   # a generation: its warm tokens per second
    return {"wall_s": wall, "compile_s": outcome["compile_s"], "warm_s": warm, "result": outcome["result"]}


def floor_round(spec: dict, env: dict) -> dict:
    t = time.time()
    p = subprocess.run([sys.executable, "-c", FLOORS[spec["runner"]], json.dumps(spec)], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    return {**json.loads(p.stdout.strip().splitlines()[-1]), "process_wall_s": time.time() - t}


def measure(model: str, repeat: int, scratch: Path, env: dict) -> dict:
    "One model's rounds (`ID`, or `LIBRARY:ID`): the floor and run.py, a warm-up first, then `repeat` rounds; the medians and the ratio."
    library, _, model = model.rpartition(":")
    folder = scratch / model.replace("/", "--"); folder.mkdir()
    spec = json.loads(subprocess.run([sys.executable, "-c", RENDER, model, str(folder), library or "transformers"], capture_output=True, text=True, env=env, check=True).stdout)
    floor_round(spec, env); run_py_round(folder, env)   # warm-up: the Hub cache and the page cache
    rounds = [(floor_round(spec, env), run_py_round(folder, env)) for _ in range(repeat)]
    med = lambda which, key: statistics.median(r[which][key] for r in rounds)
    fig = {"model": model, "runner": spec["runner"], "rounds": rounds,
           "floor": {k: med(0, k) for k in ("process_wall_s", "compile_s", "warm_s")},
           "run_py": {k: med(1, k) for k in ("wall_s", "compile_s", "warm_s")}}
    fig["ratio_wall"] = fig["run_py"]["wall_s"] / fig["floor"]["process_wall_s"]
    print(f"{model} ({spec['runner']}), median of {repeat}:")
    print(f"  floor  : wall {fig['floor']['process_wall_s']:.1f} s, compile {fig['floor']['compile_s']:.2f} s, warm {fig['floor']['warm_s'] * 1000:.1f} ms"
          f" (the CPU's answer: {', '.join(str(r[0]['equal']) for r in rounds)})")
    print(f"  run.py : wall {fig['run_py']['wall_s']:.1f} s, compile {fig['run_py']['compile_s']:.2f} s, warm {fig['run_py']['warm_s'] * 1000:.1f} ms"
          f" ({', '.join(r[1]['result'] for r in rounds)})")
    print(f"  run.py / floor (wall): {fig['ratio_wall']:.2f}")
    return fig


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", nargs="+", default=["neuron-support-demo/tiny-vit", "neuron-support-demo/tiny-whisper"])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default="runner_floor.json", help="the figures' file in benchmarks/results/")
    a = ap.parse_args()
    from neuron_support.demo import build_demo
    from neuron_support.hub import hub_server, hub_env
    scratch = Path(tempfile.mkdtemp(prefix="runner-floor-"))
    with open(scratch / "hub.log", "w") as log, hub_server(build_demo(), stderr=log) as endpoint:
        env = {**os.environ, **hub_env(endpoint, scratch / "hf-home"), "OMP_NUM_THREADS": "1"}
        figs = [measure(m, a.repeat, scratch, env) for m in a.models]
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / a.out).write_text(json.dumps(figs, indent=1))


if __name__ == "__main__":
    main()
