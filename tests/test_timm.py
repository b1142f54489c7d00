"""Issue 44: timm, the fourth library. Its demo models swept through the real command (the session's shared sweep,
tests/conftest.py: local Hub, Ray, papermill), its own table and pair, the photograph and both top fives in each
notebook, run.py rerun alone, each check failing on damaged weights, the list as `select` explains it, and a timm
checkpoint read by transformers as its users read it (the timm wrapper)."""
import json, os, re, shutil, subprocess

import nbformat
import pytest

from neuron_support.demo import build_demo
from neuron_support.publish import read_table, table_path
from neuron_support.stack import pair_key
from neuron_support.registry import library_stack
from neuron_support.sweep import run_folder
from conftest import rerun_alone, damaged_run, execute_in_kept_stack

TM = library_stack("timm", "cpu", found={})
TM_PAIR = pair_key(TM)
DEMO = "neuron-support-demo"
RUNS = {f"{DEMO}/tiny-timm-resnet": ("run_timm_classifier", "test_resnet", "resnet"),
        f"{DEMO}/tiny-timm-vit": ("run_timm_classifier", "test_vit", "vision_transformer"),
        f"{DEMO}/tiny-timm-convnext": ("run_timm_encoder", "test_convnext", "convnext")}
TOP5 = r"top-5 on cpu: (?:[^;|]+ [01]\.\d\d; ){4}[^;|]+ [01]\.\d\d \| CPU fp32: (?:[^;|]+ [01]\.\d\d; ){4}[^;|]+ [01]\.\d\d"


def test_the_demo_sweep_of_timm(tmp_path, demo_hub, demo_sweep_of_libraries):
    """`neuron-support sweep --demo --library timm` (part of the session's one sweep of the libraries): its own table under
    `<compiler>/timm-<version>`; the ResNet and ViT classifiers and the head-less ConvNeXt PASS on one core with `cpu_match`
    Y or a near-tie, their family the row's model type; the architecture this timm does not have excluded."""
    out, p = demo_sweep_of_libraries   # shared: read only
    assert p.returncode == 0, p.stderr[-3000:]
    assert "== timm: the Hub's timm models" in p.stderr
    assert TM_PAIR.endswith(f"/timm-{TM.library_version}") and table_path(out, TM_PAIR).is_file()
    table = read_table(table_path(out, TM_PAIR)).set_index("model_id")
    assert dict(table.result) == {**dict.fromkeys(RUNS, "PASS"), f"{DEMO}/tiny-timm-unknown-architecture": "EXCLUDED"}, table[["result", "notes"]]
    assert table.loc[f"{DEMO}/tiny-timm-unknown-architecture", "exclusion"] == "unsupported-task"
    assert f"'resnet_from_a_newer_timm' is an architecture timm {TM.library_version} does not have" in table.loc[f"{DEMO}/tiny-timm-unknown-architecture", "notes"]
    for model, (runner, arch, family) in RUNS.items():
        row, folder = table.loc[model], run_folder(out, TM_PAIR, model)
        assert (row.library, row.runner, row.model_type, row.neuron_cores, row.check, row.graphs) == ("timm", runner, family, 1, "cpu", 1), row
        assert row.cpu_match == "Y" or row.cpu_match.startswith("~ near-tie"), row.cpu_match
        assert row.task == ("image-classification" if runner == "run_timm_classifier" else "image-feature-extraction")
        head = row.run_py.split("\nPLAN = ")[0]
        assert f"# runner {runner} ({arch!r})" in head and f"# pip install timm=={TM.library_version}\n" in head, head
        assert "libraries.timm.runs" in head and "def run_dense(" not in row.run_py and "def check_encoder(" not in row.run_py
        assert json.loads((folder / "outcome.json").read_text())["images"] == ["input.png"]
        outputs = [o for c in nbformat.read(folder / "run.ipynb", as_version=4).cells if c.cell_type == "code" for o in c.get("outputs", [])]
        assert any("image/png" in o.get("data", {}) for o in outputs)   # the photograph
        tables = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {}) and "CPU bf16" in o["data"]["text/html"]]
        assert len(tables) == 1, model   # the comparison: the top fives rank by rank, or the features' cosines
    for model in (f"{DEMO}/tiny-timm-resnet", f"{DEMO}/tiny-timm-vit"):
        assert re.fullmatch(TOP5, table.loc[model, "notes"]), table.loc[model, "notes"]
        assert "tabby 0." in table.loc[model, "notes"]   # the labels named (by their first names), from the checkpoint's ImageNet synsets
    assert re.fullmatch(r"pooled features 64-d: cosine 0\.\d{5} with fp32 \(bf16 CPU 0\.\d{5}\)", table.loc[f"{DEMO}/tiny-timm-convnext", "notes"])
    # run.py stands alone: rerun outside the sweep, in a copy of its folder, it prints the same verdict
    vit = table.loc[f"{DEMO}/tiny-timm-vit"]
    outcome = rerun_alone(run_folder(out, TM_PAIR, f"{DEMO}/tiny-timm-vit"), demo_hub, tmp_path)
    assert (outcome["result"], outcome["cpu_match"], outcome["notes"]) == ("PASS", vit.cpu_match, vit.notes)


@pytest.mark.parametrize("model, want", [("tiny-timm-resnet", r"N (differs: |the top 5 share)"), ("tiny-timm-convnext", r"N pooled features: cosine ")])
def test_each_timm_check_fails_on_damaged_weights(model, want, tmp_path):
    "The test hook `perturb` damages the device's weights: the classifier's check and the feature extractor's each say N."
    outcome, run_py = damaged_run(build_demo() / "models" / DEMO / model, TM, tmp_path)
    assert outcome["result"] == "FAIL(output)" and outcome["check"] == "cpu", outcome
    assert re.match(want, outcome["cpu_match"]), outcome["cpu_match"]
    assert "'perturb': 'noise'" in run_py


def test_select_explains_timms_list(demo_hub, tmp_path):
    "`neuron-support select --library timm --explain` against the local Hub: timm's models in rank order, the unknown architecture excluded with its reason."
    from neuron_support.hub import hub_env
    p = subprocess.run([shutil.which("neuron-support"), "select", "--library", "timm", "--explain", "--device", "cpu", "--data", str(tmp_path / "none")],
                       capture_output=True, text=True, timeout=300, env={**os.environ, **hub_env(demo_hub, tmp_path / "hf")})
    assert p.returncode == 0, p.stderr[-2000:]
    lines = [l for l in p.stdout.splitlines() if DEMO in l]
    assert [l.split()[3] for l in lines] == [f"{DEMO}/tiny-timm-resnet", f"{DEMO}/tiny-timm-vit", f"{DEMO}/tiny-timm-convnext",
                                             f"{DEMO}/tiny-timm-unknown-architecture"], p.stdout
    assert [l.split()[2] for l in lines] == ["run", "run", "run", "excluded"]
    assert "unsupported-task: 'resnet_from_a_newer_timm' is an architecture timm" in lines[-1]
    assert re.search(r"4 models: 3 to run, 0 skipped, 1 excluded; selection of 4; pair cpu-aot_eager-torch[\d.]+/timm-[\d.]+", p.stdout), p.stdout


def test_a_timm_checkpoint_through_transformers(tmp_path):
    """The same checkpoint under transformers (the default library) is what transformers' users load: its timm wrapper,
    `TimmWrapperForImageClassification` for a head and the image-encoder runner for none; run, it passes there too."""
    from neuron_support.registry import make_plan
    tr = library_stack("transformers", "cpu", found={})
    folder = build_demo() / "models" / DEMO
    plan = make_plan(str(folder / "tiny-timm-vit"), stack=tr)
    assert (plan.model_type, plan.runner, plan.head_class) == ("timm_wrapper", "run_image_classifier", "TimmWrapperForImageClassification")
    assert make_plan(str(folder / "tiny-timm-convnext"), stack=tr).runner == "run_image_encoder"
    outcome, _, _ = execute_in_kept_stack(plan, tr, tmp_path / "run", time_limit=600, reference_cache=tmp_path / "refs", echo=lambda line: None)
    assert (outcome["result"], outcome["check"]) == ("PASS", "cpu"), outcome


def test_timms_architecture_table(timm_architecture_table, tmp_path_factory):
    """`neuron-support architectures --library timm --only ...`: a family's checkpoint is one of timm's own models with random
    weights (here the ResNet's smallest, timm's test model), its head made sure on the photograph, planned and
    run through the sweep's machinery into the timm pair's table; each PASS, its family the row's model type, and every
    architecture of its family its members (what finds the row of a checkpoint of another member, resnet50's)."""
    import timm
    from neuron_support.publish import architecture_path, read_architectures
    out, p = timm_architecture_table   # shared: read only
    assert p.returncode == 0, p.stderr[-3000:]
    assert "counting the parameters of 1 of timm" in p.stderr and "[1/1] resnet test_resnet: 469,688 parameters" in p.stderr, p.stderr[-2000:]
    table = read_architectures(architecture_path(out, TM_PAIR))
    rows = {(r["model_type"], r["class"]): r for r in table.to_dict("records")}
    assert set(rows) == {("resnet", "test_resnet")}
    for r in rows.values():
        assert (r["group"], r["runner"], r["result"]) == ("run_timm_classifier", "run_timm_classifier", "PASS"), r
        assert re.fullmatch(TOP5, r["notes"]), r["notes"]   # ImageNet's labels, named: its 1,000-class head
        assert r["members"].split() == sorted(timm.list_models(module=r["model_type"])), r["members"][:200]
    assert "resnet50" in rows[("resnet", "test_resnet")]["members"].split()
    from conftest import session_folder
    assert (session_folder(tmp_path_factory) / "timm-architectures-cache" / "architectures" / "timm" / "resnet" / "test_resnet" / "model.safetensors").is_file()
    assert "98 architectures" not in p.stdout and "1 architecture\n" in p.stdout
