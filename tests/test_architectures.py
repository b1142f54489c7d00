"""`neuron-support architectures` as a user runs it: tiny checkpoints built with the demo's tokenizers, planned, run on Ray
through the run notebook, the table written under its pair; a second invocation that runs nothing; the table published
to the local Hub and read back through hf://."""
import json, shutil, subprocess, time
from pathlib import Path

import pandas as pd
import pytest

from conftest import ORG, ARCHITECTURES_ONLY
from neuron_support.publish import architecture_path, pairs, read_architectures, publish, diff_pairs
from neuron_support.libraries import library_stack
from neuron_support.stack import pair_key

PAIR = pair_key(library_stack("transformers", "cpu"))
BERTS = [("bert", c) for c in ("BertForMaskedLM", "BertForQuestionAnswering", "BertForSequenceClassification", "BertForTokenClassification",
                                "BertLMHeadModel", "BertModel")]   # every class of the type: each head, the bare encoder, and its decoder
WRITE_TOKEN = "hf_local_test_writer"  # the local Hub accepts any token for writes


def test_the_table_holds_each_architecture_with_its_result(architecture_table):
    out, p = architecture_table
    assert p.returncode == 0, p.stderr[-3000:]
    assert pairs(out, "architectures") == [PAIR]
    t = read_architectures(architecture_path(out, PAIR)).set_index(["model_type", "class"])
    assert sorted(t.index) == [*BERTS, ("dbrx", "DbrxForCausalLM"), ("gptj", "GPTJForCausalLM"), ("llama", "LlamaForCausalLM"),
                               ("mamba", "MambaForCausalLM"), ("t5", "T5ForConditionalGeneration")]
    assert t.result.to_dict() == {**dict.fromkeys(BERTS, "PASS"), ("dbrx", "DbrxForCausalLM"): "SKIP", ("gptj", "GPTJForCausalLM"): "FAIL(gen)",
                                  ("llama", "LlamaForCausalLM"): "PASS", ("mamba", "MambaForCausalLM"): "PASS", ("t5", "T5ForConditionalGeneration"): "PASS"}
    dbrx = t.loc[("dbrx", "DbrxForCausalLM")]
    assert dbrx.notes.startswith("AttributeError: ") and pd.isna(dbrx.runner) and pd.isna(dbrx.run_py) and dbrx.tested_at is not pd.NaT   # why, and nothing ran
    t = t.drop(("dbrx", "DbrxForCausalLM"))
    assert t.runner.to_dict() == {**{b: "run_dense" if b[1] == "BertLMHeadModel" else "run_encoder" for b in BERTS},   # each head, and BERT as a decoder
                                  ("gptj", "GPTJForCausalLM"): "run_dense", ("llama", "LlamaForCausalLM"): "run_dense",
                                  ("mamba", "MambaForCausalLM"): "run_dense", ("t5", "T5ForConditionalGeneration"): "run_seq2seq"}
    gptj = t.loc[("gptj", "GPTJForCausalLM")]
    assert gptj.cpu_eager.startswith("RuntimeError: The size of tensor a") and gptj.error_signature   # the CPU fails too: the model's, not the harness's
    assert t.drop(("gptj", "GPTJForCausalLM")).cpu_eager.isna().all()   # a PASS has nothing to repeat on the CPU
    assert (t.library == "transformers").all() and (t.device == "cpu").all() and t.tested_at.notna().all()
    assert t.run_py.str.contains("PLAN = ").all() and (t.params < 30_000_000).all()
    assert t.loc[("mamba", "MambaForCausalLM")].settings == "one prefill" and t.loc[("llama", "LlamaForCausalLM")].settings == "card"
    assert "harness failures (a FAIL on the CPU whose call the CPU runs eagerly, or computes otherwise): 0" in p.stdout
    assert "start llama:LlamaForCausalLM on cores" in p.stderr and "architectures/llama/LlamaForCausalLM on cores" not in p.stderr   # named as the table names it
    runs = out / "architecture-runs" / "runs" / PAIR
    assert len(list(runs.glob("*/run.ipynb"))) == 10   # each run's executed notebook, as a model's


def test_a_second_invocation_runs_nothing(architecture_table, tmp_path):
    out, _ = architecture_table
    mine = shutil.copytree(out, tmp_path / "out")   # the session's folder is shared: a copy to write in
    before = read_architectures(architecture_path(mine, PAIR))
    t0 = time.time()
    p = subprocess.run([shutil.which("neuron-support"), "architectures", "--only", ARCHITECTURES_ONLY, "--slots", "2",
                        "--device", "cpu", "--out", str(mine)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "11 architectures: 0 to run, 10 unchanged since their last run, 1 that cannot run" in p.stderr
    assert "starting Ray" not in p.stderr   # no run, no Ray
    pd.testing.assert_frame_equal(read_architectures(architecture_path(mine, PAIR)), before)


def test_the_table_is_published_and_read_back(architecture_table, tmp_path, hub):
    out, _ = architecture_table
    repo = f"{ORG}/architectures-{time.time_ns()}"
    changes = publish(out, repo, token=WRITE_TOKEN)
    assert f"architectures/{PAIR}.parquet" in {c.path for c in changes}
    back = pd.read_parquet(f"hf://datasets/{repo}/architectures")
    mine = read_architectures(architecture_path(out, PAIR))
    cols = ["model_type", "class", "result", "cpu_eager", "runner", "run_py"]
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
