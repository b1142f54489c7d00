"""Issue 56 (Hardening IV): a name is data, never code; a published row names nothing of a machine; a check that crashed
passes nothing. One test (or two) a defect, each shown to fail on the code before its fix (the closing note says how):

1. a folder whose name holds a newline and Python runs no Python: run.py shows the name as a literal, the row as one line
   (every string field of a plan, rendered into run.py: `nbs/18_script.ipynb`);
2. a check's own exception is the harness's FAIL(other), never a PASS; a processor's bf16 pixels (Llama 4's, in the
   Hub's layout) are cast for the fp32 reference; eager attention past run.py's memory limit gives way to sdpa, said;
3. no folder of this machine in a row, a notebook, a log or a sweep's output (a loader's error quoting the Hugging Face
   cache; the shared demo sweep; the benchmarks' published tables);
4. a local sweep starts its own Ray whatever RAY_ADDRESS says, and `--only` runs a local folder as `run` does;
5. the app serves a folder that holds only an architecture table; a made-up class is said in the row (the hostile folder's
   run of 1); an output folder inside the checkpoint it runs is refused.
"""
import ast, json, os, re, shutil, socket, subprocess, sys, tempfile, time, urllib.error, urllib.request
from pathlib import Path

import pandas as pd
import pytest

from conftest import HF_HOME, free_port, session_folder
from test_hardening import tiny_llama, only_row, CONTROL
from test_hardening3 import cli, one_line_error
from neuron_support.hub import hub_env, hub_server
from neuron_support.publish import read_table, table_path, architecture_path, architecture_bytes, architecture_frame
from neuron_support.stack import pair_key, write_atomic
from neuron_support.registry import library_stack

STACK = library_stack("transformers", "cpu", found={})
PAIR = pair_key(STACK)
CHECKOUT = Path(__file__).resolve().parents[1]
DEMO_MODELS = Path(os.environ.get("NEURON_SUPPORT_CACHE") or Path.home() / ".cache" / "neuron-support") / "demo" / "models" / "neuron-support-demo"


def rows_of(out: Path) -> list:
    "Every row of the pair's table in an output folder."
    return read_table(table_path(out, PAIR)).to_dict("records")


def run_files(out: Path) -> dict:
    "{path: text} of every file a run or a sweep left under `out` (a parquet table as its rows' text), links not followed."
    found = {}
    for p in sorted(out.rglob("*")):
        if p.is_symlink() or not p.is_file(): continue
        found[str(p)] = (read_table(p).to_json() if p.suffix == ".parquet" else p.read_text(errors="replace"))
    return found


def machine_paths(text: str, folders: list) -> list:
    "The folders of this machine that `text` names."
    return [f for f in folders if f and f != "/" and re.search(rf"(?<![\w.~-]){re.escape(f)}(?![\w.~-])", text)]


# 1: a folder's name becomes no code --------------------------------------------------------------------------------

HOSTILE_NAME = 'x\n__import__("pathlib").Path("PWNED").touch()\n#'


def test_a_folder_name_is_data_never_code(tmp_path):
    """A checkpoint folder named `x<newline>Python<newline>#`, whose config declares a class transformers does not have
    (`NoSuchThingForCausalLM`): `run` runs no Python of the name (no PWNED file anywhere), run.py's header shows the name as
    a literal, one line, the row's name is one line too, and the row says first that the declared class does not exist."""
    folder = tiny_llama(tmp_path / "checkpoints" / HOSTILE_NAME, architectures=["NoSuchThingForCausalLM"])
    p = cli("run", folder, "--out", tmp_path / "out", cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert not list(tmp_path.rglob("PWNED")), "the folder's name ran as Python"
    row = only_row(tmp_path / "out")
    assert row["result"] == "PASS" and not CONTROL.search(row["model_id"]) and "\\n__import__" in row["model_id"], row["model_id"]
    header = row["run_py"].split("\nPLAN = ")[0].splitlines()
    assert header[1] == f"# neuron-support run of {row['model_id']!r}", header[1]
    calls = [n for n in ast.walk(ast.parse(row["run_py"])) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "__import__"]
    assert calls == [], [ast.unparse(c) for c in calls]
    assert row["notes"].startswith("(its config declares 'NoSuchThingForCausalLM', which transformers"), row["notes"]
    assert "loaded as AutoModelForCausalLM" in row["notes"], row["notes"]


# 2: a check that raises passes nothing ----------------------------------------------------------------------------

def test_a_check_that_raises_is_the_harness_failure(tmp_path):
    """The real ranks and runner of a tiny Llama, its check a stand-in that raises as a harness defect would: FAIL(other),
    culprit `harness`, the check's traceback in the error; the architecture table calls it the harness's."""
    from neuron_support.core import run_plan
    from neuron_support.libraries.transformers.text import RUNNERS
    from neuron_support.registry import make_plan
    from neuron_support.script import plan_dict
    from neuron_support.architectures import culprit

    def broken_check(plan, path, out, cache_dir): raise TypeError("compare_generation() got an unexpected keyword argument 'tokenizer'")
    plan = make_plan(str(tiny_llama(tmp_path / "llama")), stack=STACK, max_new_tokens=4, min_new_tokens=4)
    o = run_plan(plan_dict(plan, STACK, 300), RUNNERS, {"run_dense": broken_check}, None)
    assert (o["result"], o["culprit"]) == ("FAIL(other)", "harness"), o
    assert o["check"].startswith("failed: the harness's own error (TypeError: compare_generation()"), o["check"]
    assert o["notes"].startswith("the output check failed on its own (the harness's error, not the model's)"), o["notes"]
    assert "Traceback" in o["error"] and "broken_check" in o["error"]
    assert culprit({"result": o["result"], "cpu_eager": ""}, o, "transformers") == "harness"


def hub_llama4(root: Path) -> Path:
    """A tiny random Llama 4 in the Hub's layout of meta-llama/Llama-4-Scout-17B-16E-Instruct: the architecture table's
    builder's checkpoint, its weights in shards with an index, its image processor in preprocessor_config.json (which
    hands out bf16 pixels), the processor's own arguments in processor_config.json, the chat template in chat_template.json."""
    import torch, transformers
    from neuron_support.architectures import build_checkpoints
    from neuron_support.libraries.transformers.demo import hub_layout
    built = Path(build_checkpoints("transformers", ["llama4:Llama4ForConditionalGeneration"], root / "built", say=lambda _: None)[0]["folder"])
    dest = root / "Llama-4-Scout-tiny-Instruct"
    processor = transformers.AutoProcessor.from_pretrained(built)
    transformers.Llama4ForConditionalGeneration.from_pretrained(built, dtype=torch.bfloat16).save_pretrained(dest, max_shard_size="4MB")
    processor.save_pretrained(dest)
    hub_layout(dest, processor)
    for name in ("config.json", "generation_config.json"): shutil.copy(built / name, dest / name)
    return dest


def test_a_processors_bf16_pixels_are_checked_against_the_cpu(tmp_path):
    """Llama 4's processor hands out bf16 pixels: the fp32 reference takes them cast, as a user would, and the run is
    compared with the CPU (it had raised "expected m1 and m2 to have the same dtype" and passed unchecked)."""
    folder = hub_llama4(tmp_path)
    assert {"preprocessor_config.json", "processor_config.json", "chat_template.json", "model.safetensors.index.json"} <= {p.name for p in folder.iterdir()}
    assert len(list(folder.glob("model-*-of-*.safetensors"))) > 1
    p = cli("run", folder, "--out", tmp_path / "out")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    row = only_row(tmp_path / "out")
    assert (row["runner"], row["result"], row["check"]) == ("run_multimodal", "PASS", "cpu"), (row["check"], row["notes"], row["error"])
    assert row["cpu_match"] == "Y" or row["cpu_match"].startswith("~ near-tie"), row["cpu_match"]


def test_eager_attention_past_the_memory_limit_takes_sdpa(tmp_path):
    """A YOLOS with 20,000 detection tokens on a 0.5 GiB core: the device's run fits, the CPU reference's eager attention
    does not fit run.py's memory limit (its scores alone ask gigabytes): the reference takes sdpa, the row says so, and the
    boxes are compared (they had passed unchecked, "CPU reference failed")."""
    import torch, transformers
    folder = tmp_path / "yolos-20k"
    shutil.copytree(DEMO_MODELS / "tiny-yolos", folder)
    config = transformers.YolosConfig.from_pretrained(folder)
    config.num_detection_tokens = 20_000
    torch.manual_seed(0)
    transformers.YolosForObjectDetection(config).to(torch.bfloat16).save_pretrained(folder)
    p = cli("run", folder, "--out", tmp_path / "out", "--core-gb", "0.5")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    row = only_row(tmp_path / "out")
    assert (row["runner"], row["result"]) == ("run_object_detection", "PASS"), (row["check"], row["notes"], row["error"])
    assert row["check"] == "cpu (sdpa attention: eager's did not fit run.py's memory limit)" and row["cpu_match"], row["check"]
    assert "computing it with sdpa" in p.stdout, p.stdout[-3000:]


# 3: no folder of this machine in what a run leaves -----------------------------------------------------------------

def test_a_loaders_error_names_the_cache_not_this_machine(tmp_path):
    """A Hub model whose preprocessor_config.json is broken: transformers' error quotes the file in the Hugging Face cache;
    the row, its notebook, run.py's outcome and the sweep-free run's files name it `<hf-cache>/org--name/...`, and nothing
    of this machine's folders."""
    root = tmp_path / "catalog"
    model = root / "models" / "acme" / "broken-processor"
    shutil.copytree(DEMO_MODELS / "tiny-vit", model)
    (model / "preprocessor_config.json").write_text('{"image_processor_type": "ViTImageProcessor", ')
    (root / "catalog.json").write_text(json.dumps({"models": [{"id": "acme/broken-processor", "pipeline_tag": "image-classification",
                                                               "library_name": "transformers", "downloads": 5}]}))
    home = tmp_path / "hf-home"
    with hub_server(root) as endpoint:
        p = cli("run", "acme/broken-processor", "--out", tmp_path / "out", env=hub_env(endpoint, home))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    row = only_row(tmp_path / "out")
    assert row["result"] == "FAIL(load)" and "<hf-cache>/acme--broken-processor/preprocessor_config.json" in row["error"], row["error"]
    files = run_files(tmp_path / "out")
    assert {"run.ipynb", "outcome.json", "result.json", "run.py"} <= {Path(f).name for f in files}
    named = {f: machine_paths(t, [str(tmp_path), str(home), sys.prefix, str(CHECKOUT), str(Path.home())]) for f, t in files.items()}
    assert not any(named.values()), {f: n for f, n in named.items() if n}


def test_a_sweeps_output_names_no_folder_of_this_machine(demo_sweep_of_libraries, tmp_path_factory):
    """Every file of the shared demo sweep's output (its tables' rows, the notebooks, the logs, the outcomes, the scripts)
    names no folder of this machine: the session's temporary folders, the Hugging Face home, Python's, the checkout, home."""
    out, _ = demo_sweep_of_libraries
    files = run_files(out)
    assert sum(f.endswith("run.ipynb") for f in files) > 10 and any(f.endswith("sweep.log") for f in files)
    folders = [str(session_folder(tmp_path_factory)), HF_HOME, sys.prefix, sys.base_prefix, str(CHECKOUT), str(Path.home())]
    named = {f: machine_paths(t, folders) for f, t in files.items()}
    assert not any(named.values()), {f: n for f, n in named.items() if n}


def test_the_published_benchmark_tables_name_no_folder_of_a_machine():
    "The architecture tables published under benchmarks/results/ name no checkpoint folder of the machine that ran them."
    tables = sorted((CHECKOUT / "benchmarks" / "results").glob("*.csv"))
    assert tables
    found = {t.name: re.findall(r"(?<![\w.<>~-])/(?:tmp|root|home|work|Users|var/folders)/[^\s,'\"]*", t.read_text()) for t in tables}
    assert not any(found.values()), {k: v[:3] for k, v in found.items() if v}


# 4: a local sweep is local, and reads a folder as `run` does -------------------------------------------------------

def test_a_local_sweep_ignores_ray_address_and_runs_a_local_folder(tmp_path):
    """`RAY_ADDRESS` names a cluster that is not there: `sweep --only FOLDER` (no `--address`) starts its own Ray, runs the
    local folder as `run` would (it had run nothing and exited 0), and its files name no folder of this machine but the
    journal, which must find the folder again to resume."""
    folder = tiny_llama(tmp_path / "my-llama")
    env = {"RAY_ADDRESS": f"127.0.0.1:{free_port()}"}
    p = cli("sweep", "--only", folder, "--library", "transformers", "--slots", "1", "--out", tmp_path / "out", env=env)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    rows = rows_of(tmp_path / "out")
    assert [(r["model_id"][:15], r["result"]) for r in rows] == [("local:my-llama-", "PASS")], rows
    files = {f: t for f, t in run_files(tmp_path / "out").items() if not f.endswith("sweep.json")}
    named = {f: machine_paths(t, [str(tmp_path), sys.prefix, str(CHECKOUT)]) for f, t in files.items()}
    assert not any(named.values()), {f: n for f, n in named.items() if n}
    one_line_error(cli("sweep", "--only", folder, "--library", "transformers", "--out", folder / "out"), "inside the checkpoint folder")


# 5: the small ones ------------------------------------------------------------------------------------------------

def test_the_app_serves_a_folder_holding_only_an_architecture_table(tmp_path):
    "`app --data DIR` where DIR holds an architecture table and no models' table yet: it serves the Architectures page (it had refused the folder)."
    write_atomic(architecture_path(tmp_path, PAIR), architecture_bytes(architecture_frame([
        {"model_type": "llama", "class": "LlamaForCausalLM", "group": "text-generation", "runner": "run_dense", "result": "PASS",
         "library": "transformers", "check": "cpu", "device": "cpu", "tested_at": "2026-12-05T00:00:00Z"}])))
    port = free_port()
    app = subprocess.Popen([shutil.which("neuron-support"), "app", "--data", str(tmp_path), "--port", str(port)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        deadline = time.time() + 120
        while time.time() < deadline and app.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/architectures", timeout=5) as r: page = r.read().decode(); break
            except OSError: time.sleep(0.5)
        else: pytest.fail(f"the app did not answer: {app.poll()} {app.stdout.read() if app.poll() is not None else ''}")
        assert "LlamaForCausalLM" in page
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).close()   # the first page: no model yet, said
        with pytest.raises(urllib.error.HTTPError) as e: urllib.request.urlopen(f"http://127.0.0.1:{port}/compiler", timeout=30)
        assert e.value.code == 404 and "No table of models yet" in e.value.read().decode()
    finally:
        app.kill(); app.wait()


def test_run_dot_refuses_an_output_folder_inside_the_checkpoint(tmp_path):
    "`run .` in a checkpoint's folder: its default `out` would be inside the checkpoint; one line, nothing written there."
    folder = tiny_llama(tmp_path / "ckpt")
    one_line_error(cli("run", ".", cwd=folder), "inside the checkpoint folder local:ckpt-")
    assert not (folder / "out").exists()
