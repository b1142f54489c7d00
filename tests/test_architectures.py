"""`neuron-support architectures` as a user runs it: tiny checkpoints built with the demo's tokenizers, planned, run on Ray
through the run notebook, the table written under its pair; a second invocation that runs nothing; the table published
to the local Hub and read back through hf://."""
import json, os, shutil, subprocess, time
from pathlib import Path

import pandas as pd
import pytest

from conftest import ORG, ARCHITECTURES_ONLY, BROKEN_TINY
from neuron_support.publish import architecture_path, pairs, read_architectures, publish, diff_pairs
from neuron_support.registry import library_stack
from neuron_support.stack import pair_key

PAIR = pair_key(library_stack("transformers", "cpu"))
BERTS = [("bert", c) for c in ("BertForMaskedLM", "BertLMHeadModel", "BertModel")]   # a head, the bare encoder, and its decoder
WRITE_TOKEN = "hf_local_test_writer"  # the local Hub accepts any token for writes


MAMBA, ZOE, MASKFORMER = ("mamba", "MambaForCausalLM"), ("zoedepth", "ZoeDepthForDepthEstimation"), ("maskformer", "MaskFormerForInstanceSegmentation")
PASSING = [("llama", "LlamaForCausalLM"), ("t5", "T5ForConditionalGeneration"), ("mamba", "MambaForCausalLM"),
           ("deepseek_v3", "DeepseekV3ForCausalLM"), ("blenderbot", "BlenderbotForCausalLM"),
           ("blenderbot", "BlenderbotForConditionalGeneration"),   # these three: the first table's wrongly blamed architectures
           ("owlv2", "Owlv2ForObjectDetection"),   # a dense vision group's: the text queries, its weights made sure (`SURE`)
           ZOE,   # a depth estimator
           MASKFORMER]   # a universal segmenter


def test_the_table_holds_each_architecture_with_its_result(architecture_table):
    """Each architecture's row: the passing ones; FNet failing everywhere in bf16 (transformers' code, at both sizes); MPT failing
    with the card's settings (the CPU generates with transformers' own); GPT-J, broken on purpose at the tiny size, a builder's
    SKIP (four times as wide it runs), not a FAIL; DBRX not built; OmDet-Turbo, which no runner serves, EXCLUDED without a build
    (its build fails, and that is no builder's miss to report). No row is a FAIL the builder caused."""
    out, p = architecture_table
    assert p.returncode == 0, p.stderr[-3000:]
    assert pairs(out, "architectures") == [PAIR]
    t = read_architectures(architecture_path(out, PAIR)).set_index(["model_type", "class"])
    fnet, mpt, gptj, dbrx = ("fnet", "FNetForMaskedLM"), ("mpt", "MptForCausalLM"), ("gptj", "GPTJForCausalLM"), ("dbrx", "DbrxForCausalLM")
    omdet = ("omdet-turbo", "OmDetTurboForObjectDetection")
    assert sorted(t.index) == sorted([*BERTS, *PASSING, fnet, mpt, gptj, dbrx, omdet])
    assert t.result.to_dict() == {**dict.fromkeys(BERTS + PASSING, "PASS"), fnet: "FAIL(forward)", mpt: "FAIL(gen)", gptj: "SKIP", dbrx: "SKIP", omdet: "EXCLUDED"}, t.result
    assert t.culprit.fillna("").to_dict() == {**dict.fromkeys(BERTS + PASSING, ""), fnet: "transformers", mpt: "settings", gptj: "builder", dbrx: "", omdet: ""}, t.culprit
    assert t.loc[omdet].notes == "a zero-shot object detector prompted with a task beside its classes (OmDet-Turbo: boxes for text queries): no runner serves it yet (OmDetTurboForObjectDetection)" and pd.isna(t.loc[omdet].run_py)
    assert t.loc[fnet].cpu_eager.startswith("NotImplementedError") and t.loc[mpt].cpu_eager.startswith("ValueError: Cannot use prefill chunking")
    g = t.loc[gptj]   # the tiny checkpoint's own failure: named, with what failed, and nothing blamed on the architecture
    assert g.notes.startswith("the tiny checkpoint's own failure (FAIL(gen) on the CPU too: RuntimeError: The size of tensor a") and "4 times as wide it runs on the CPU (PASS)" in g.notes, g.notes
    assert isinstance(g.run_py, str) and g.cpu_eager.startswith("RuntimeError")
    assert t.loc[dbrx].notes.startswith("transformers' own defaults do not make it (DbrxConfig(): AttributeError: ") and pd.isna(t.loc[dbrx].runner) and pd.isna(t.loc[dbrx].run_py)   # why (its own defaults fail), and nothing ran
    ran = t.drop([dbrx, omdet])
    assert ran.runner.to_dict() == {**{b: "run_dense" if b[1] == "BertLMHeadModel" else "run_encoder" for b in BERTS}, fnet: "run_encoder",
                                    **{k: "run_seq2seq" if k[1] in ("T5ForConditionalGeneration", "BlenderbotForConditionalGeneration") else "run_dense"
                                       for k in [*PASSING, mpt, gptj]}, ("owlv2", "Owlv2ForObjectDetection"): "run_zero_shot_detection",
                                    ZOE: "run_depth_estimation", MASKFORMER: "run_universal_segmentation"}
    assert (ran.library == "transformers").all() and (ran.device == "cpu").all() and ran.tested_at.notna().all()
    assert ran.run_py.str.contains("PLAN = ").all() and (ran.params < 30_000_000).all()
    assert t.loc[("mamba", "MambaForCausalLM")].settings == "one prefill" and t.loc[("llama", "LlamaForCausalLM")].settings == "card"
    assert t.loc[MAMBA]["head"].startswith("its output echoed its input: its 8 Linear layers drawn at 1/sqrt(fan-in); backbone.norm_f x")   # `echoes`
    # what `SURE` drew, not the sharp head it then redrew
    assert t.loc[("owlv2", "Owlv2ForObjectDetection")]["head"].startswith("class_head's box embeddings spread on the photograph"), t.loc[("owlv2", "Owlv2ForObjectDetection")]["head"]
    # `flat_output`: its depth the softplus of nothing at every pixel until its convolutions were drawn live too
    assert t.loc[ZOE]["head"].startswith("its output the same at every pixel: its ") and " convolutions drawn at 1/sqrt(fan-in)" in t.loc[ZOE]["head"]
    assert t.loc[("llama", "LlamaForCausalLM")]["head"].startswith("lm_head x") and t.loc[("bert", "BertForMaskedLM")]["head"].endswith("(cls.predictions.decoder shares the input embeddings)")   # what the builder drew sharp
    blender = json.loads((Path(build_folder("blenderbot", "BlenderbotForConditionalGeneration")) / "config.json").read_text())
    assert blender["max_position_embeddings"] == 128   # its run passed within its own 128 positions
    assert "harness failures (a check that raised, or a FAIL on the CPU whose call the CPU runs eagerly, or computes otherwise): 0" in p.stdout
    assert "building them 4 times as wide" in p.stderr and "gptj:GPTJForCausalLM@4" in p.stderr
    assert p.stderr.count("starting Ray") == 1, p.stderr[-3000:]   # the wider checks' runs go to the Ray the first runs started
    assert "start llama:LlamaForCausalLM on cores" in p.stderr and "architectures/llama/LlamaForCausalLM on cores" not in p.stderr   # named as the table names it
    runs = out / "architecture-runs" / "runs" / PAIR
    assert len(list(runs.glob("*/run.ipynb"))) == len(ran) + 3   # each run's notebook, and the three run again four times as wide
    assert t.damage_noise.isna().all() and t.damage_swap.isna().all() and "damaged" not in p.stderr   # `--no-damage`: intact runs only


def test_passing_rows_without_damaged_runs_get_them_and_the_check_catches_the_damage(architecture_table, damaged_architecture_table):
    """Passing rows with no damaged runs (this session's table was made with `--no-damage`; a table from before them, or a command
    interrupted before they ran) get them on the next invocation, their intact runs not run again: each run twice more with its
    weights damaged on the device's side (noise; every weight matrix flipped), against its intact CPU reference. The check fails
    every damaged run (issue 57) but the one it names, and the summary gives the share caught per group."""
    out, p = damaged_architecture_table
    assert p.returncode == 0, p.stderr[-3000:]
    assert "3 architectures: 0 to run, 3 unchanged since their last run" in p.stderr and "3 passing: running each again damaged (noise and swap)" in p.stderr, p.stderr[-2000:]
    assert "start mamba:MambaForCausalLM (swap) on cores" in p.stderr
    damage = ["damage_noise", "damage_swap"]
    intact = read_architectures(architecture_path(architecture_table[0], PAIR))
    t = read_architectures(architecture_path(out, PAIR))
    pd.testing.assert_frame_equal(t.drop(columns=damage), intact.drop(columns=damage))   # the intact rows as they were, their times too
    t = t.set_index(["model_type", "class"])
    damaged = [("bert", "BertForMaskedLM"), MAMBA, MASKFORMER]
    # Mamba flipped too: its layers drawn live, its generation is theirs, not its embeddings' given back (`echoes`)
    assert (t.loc[damaged[:2], damage] == "FAIL(output)").all().all(), t[damage]
    assert t.loc[MASKFORMER, damage].tolist() == ["PASS Y", "FAIL(output)"]   # its queries all one class: its map the same with noise (benchmarks/README.md)
    assert t.drop(damaged)[damage].isna().all().all()   # the rows --only left out: not run damaged
    assert "not caught: maskformer MaskFormerForInstanceSegmentation: noise PASS Y" in p.stdout
    assert f"  all{' ' * 42}noise {'2/3':>7}  swap {'3/3':>7}  {5 / 6:>4.0%}" in p.stdout, p.stdout[-1500:]
    for d in ("noise", "swap"):   # the damaged runs' notebooks, to open as any run's
        assert len(list((out / "architecture-runs" / f"damaged-{d}" / "runs" / PAIR).glob("*/run.ipynb"))) == len(damaged)


def build_folder(model_type, cls):
    from neuron_support.libraries.transformers.tiny_checkpoints import checkpoint_folder
    return checkpoint_folder(model_type, cls)


def test_a_second_invocation_runs_nothing(architecture_table, tmp_path):
    out, _ = architecture_table
    mine = shutil.copytree(out, tmp_path / "out")   # the session's folder is shared: a copy to write in
    before = read_architectures(architecture_path(mine, PAIR))
    p = subprocess.run([shutil.which("neuron-support"), "architectures", "--only", ARCHITECTURES_ONLY, "--slots", "2",
                        "--device", "cpu", "--no-damage", "--out", str(mine)], capture_output=True, text=True, timeout=600, env={**os.environ, **BROKEN_TINY})
    assert p.returncode == 0, p.stderr[-3000:]
    n = len(before)
    assert f"{n} architectures: 0 to run, {n - 2} unchanged since their last run, 2 that cannot run" in p.stderr, p.stderr[-2000:]   # DBRX, not built; OmDet-Turbo, served by no runner
    assert "starting Ray" not in p.stderr   # no run, no Ray
    pd.testing.assert_frame_equal(read_architectures(architecture_path(mine, PAIR)), before)


def test_the_table_is_published_and_read_back(architecture_table, tmp_path, hub):
    out, _ = architecture_table
    repo = f"{ORG}/architectures-{time.time_ns()}"
    changes = publish(out, repo, token=WRITE_TOKEN)
    assert f"architectures/{PAIR}.parquet" in {c.path for c in changes}
    back = pd.read_parquet(f"hf://datasets/{repo}/architectures")
    mine = read_architectures(architecture_path(out, PAIR))
    cols = ["model_type", "class", "result", "cpu_eager", "runner", "run_py", "damage_noise", "damage_swap"]
    pd.testing.assert_frame_equal(back[cols].sort_values(["model_type", "class"], ignore_index=True), mine[cols].sort_values(["model_type", "class"], ignore_index=True))
    from huggingface_hub import hf_hub_download
    card = Path(hf_hub_download(repo, "README.md", repo_type="dataset")).read_text()
    assert "config_name: architectures" in card and "path: architectures/*/*.parquet" in card   # load_dataset(repo, "architectures")


def test_an_unknown_library_and_a_bad_only_are_one_line(tmp_path):
    for args, said in ((["--library", "sentence-transformers"], "sentence-transformers has no architectures of its own"),
                       (["--only", "no_such_type"], "--only no_such_type: no architecture of transformers"),
                       (["--max-runs", "-1"], "--max-runs must be 0 or more")):
        p = subprocess.run([shutil.which("neuron-support"), "architectures", *args, "--out", str(tmp_path / "out"), "--device", "cpu"],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 2 and said in p.stderr and "Traceback" not in p.stderr, (args, p.stderr[-2000:])
        assert len(p.stderr.strip().splitlines()[-1]) < 400
