"""Issue 61: peft, the fifth library. Its demo adapters swept through the real command (the session's shared sweep,
tests/conftest.py: local Hub, Ray, papermill) into their own table and pair: LoRAs over the tiny Llama and the tiny
Qwen2.5-VL PASS, unmerged and merged, the same Llama LoRA untrained (B zero) PASS with a row that says its adapter
changes nothing, a prefix-tuning adapter excluded; run.py rerun alone; and an adapter damaged on its own weights
FAIL(output)."""
import json, os, re, subprocess, sys

import pandas as pd
import pytest

from neuron_support.hub import hub_env
from neuron_support.publish import read_table, table_path
from neuron_support.stack import pair_key
from neuron_support.registry import library_stack
from neuron_support.sweep import run_folder
from conftest import rerun_alone

PE = library_stack("peft", "cpu", found={})
PE_PAIR = pair_key(PE)
DEMO = "neuron-support-demo"
LORA, ZERO, PREFIX, VL = f"{DEMO}/tiny-llama-lora", f"{DEMO}/tiny-llama-lora-zero-b", f"{DEMO}/tiny-llama-prefix", f"{DEMO}/tiny-qwen2.5-vl-lora"
RUNS = {LORA: ("run_adapter", "llama", "tiny-llama"), ZERO: ("run_adapter", "llama", "tiny-llama"),
        VL: ("run_adapter_multimodal", "qwen2_5_vl", "tiny-qwen2.5-vl")}


def test_the_demo_sweep_of_peft(tmp_path, demo_hub, demo_sweep_of_libraries):
    """`neuron-support sweep --demo --library peft` (part of the session's one sweep): its own table under
    `<compiler>/peft-<version>`; the LoRAs over the tiny Llama and the tiny Qwen2.5-VL PASS over their base, named with its
    commit, unmerged and merged; the zero-B LoRA's notes say that it changes nothing, the trained ones' do not; the
    prefix-tuning adapter excluded as an unsupported task."""
    out, p = demo_sweep_of_libraries   # shared: read only
    assert p.returncode == 0, p.stderr[-3000:]
    assert PE_PAIR.endswith(f"/peft-{PE.library_version}") and table_path(out, PE_PAIR).is_file()
    table = read_table(table_path(out, PE_PAIR)).set_index("model_id")
    assert dict(table.result) == {**dict.fromkeys(RUNS, "PASS"), PREFIX: "EXCLUDED"}, table[["result", "notes", "error"]]
    assert table.loc[PREFIX, "exclusion"] == "unsupported-task" and "PREFIX_TUNING adapter changes the model's inputs" in table.loc[PREFIX, "notes"]
    for model, (runner, model_type, base) in RUNS.items():
        row = table.loc[model]
        assert (row.library, row.runner, row.model_type, row.neuron_cores, row.check[:3]) == ("peft", runner, model_type, 1, "cpu"), row
        assert re.search(r"; merged into its base: (Y|~ near-tie at token \d+ \(gap)", row.check), row.check   # the second, merged run: held to the same reference
        assert row.cpu_match == "Y" or row.cpu_match.startswith("~ near-tie"), row.cpu_match
        head = row.run_py.split("\nPLAN = ")[0]
        assert "libraries.peft.runs" in head and f"# pip install peft=={PE.library_version}\n" in head, head
        assert f"'base_model': '{DEMO}/{base}'" in row.run_py and "'base_revision': '" in row.run_py
    assert table.loc[ZERO, "notes"].startswith("the adapter changes nothing on the prompt: its base alone gives the same 32 tokens"), table.loc[ZERO, "notes"]
    assert "changes nothing" not in table.loc[LORA, "notes"] + table.loc[VL, "notes"]
    outcome = rerun_alone(run_folder(out, PE_PAIR, LORA), demo_hub, tmp_path)   # run.py stands alone: the base downloaded too
    assert (outcome["result"], outcome["cpu_match"]) == ("PASS", table.loc[LORA, "cpu_match"])


DAMAGED = """
import json, sys
from neuron_support.registry import library_stack, make_plan
from neuron_support.script import execute_plan
stack = library_stack("peft", "cpu", found={})
outcome, run_py, _ = execute_plan(make_plan(sys.argv[1], stack=stack, max_new_tokens=8, min_new_tokens=8), stack, sys.argv[2], time_limit=600,
                                  perturb=sys.argv[3], reference_cache=sys.argv[2] + "-refs", echo=lambda line: None)
print(json.dumps({"outcome": outcome, "perturbed": "'perturb': '" + sys.argv[3] + "'" in run_py}, default=str))
"""


@pytest.mark.parametrize("model, how", [(LORA, "noise"), (LORA, "swap"), (VL, "noise")])
def test_an_adapter_damaged_on_its_own_weights_fails(model, how, demo_hub, tmp_path):
    """The test hook `perturb` damages the adapter's weights only (its base untouched): the run is FAIL(output), its tokens
    held to the CPU's run of the same base with the intact adapter."""
    p = subprocess.run([sys.executable, "-c", DAMAGED, model, str(tmp_path / "run"), how], capture_output=True, text=True, timeout=900,
                       env={**os.environ, **hub_env(demo_hub, tmp_path / "hf")})
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    outcome = got["outcome"]
    assert got["perturbed"] and outcome["result"] == "FAIL(output)" and outcome["check"].startswith("cpu"), outcome
    assert outcome["cpu_match"].startswith("N first differs at token"), outcome["cpu_match"]
    assert "merged into its base: N first differs at token" in outcome["check"], outcome["check"]   # damaged before it is merged


def test_the_adapter_architecture_table(adapter_architecture_table, demo_hub, tmp_path):
    """`neuron-support architectures --library peft` (issue 61): a tiny LoRA over each causal LM transformers' builder makes,
    its rows in peft's own architecture table. The LoRA over the tiny Llama passes, unmerged and merged, and its damaged runs
    are FAIL(output); over MPT it fails as its base fails alone (the base's culprit, read from transformers' table); Mamba's
    out_proj, which peft refuses, is left out and said; DBRX's base is not built (a SKIP). run.py names the local base by its
    name only, and runs alone from a copy of its folder, the base found by its link."""
    from neuron_support.publish import architecture_path, read_architectures, CULPRITS
    out, p = adapter_architecture_table
    assert p.returncode == 0, p.stderr[-3000:]
    t = read_architectures(architecture_path(out, PE_PAIR)).set_index(["model_type", "class"])
    llama, mpt, mamba, dbrx = ("llama", "LlamaForCausalLM"), ("mpt", "MptForCausalLM"), ("mamba", "MambaForCausalLM"), ("dbrx", "DbrxForCausalLM")
    assert sorted(t.index) == sorted([llama, mpt, mamba, dbrx]) and (t.group == "run_adapter").all() and (t.library == "peft").all()
    assert t.result.to_dict() == {llama: "PASS", mpt: "FAIL(gen)", mamba: "PASS", dbrx: "SKIP"}, t[["result", "notes"]]
    assert t.culprit.fillna("").to_dict() == {llama: "", mpt: "base", mamba: "", dbrx: ""}, t.culprit
    assert "base" in CULPRITS and "adapter" in CULPRITS
    assert re.fullmatch(r"cpu; merged into its base: (Y|~ near-tie at token \d+ \(gap \d\.\d+\))", t.loc[llama].check), t.loc[llama].check
    assert (t.loc[[llama, mamba], ["damage_noise", "damage_swap"]] == "FAIL(output)").all().all(), t[["damage_noise", "damage_swap"]]
    assert t.loc[mamba]["head"].endswith("; the LoRA leaves out out_proj, which peft refuses in this family"), t.loc[mamba]["head"]
    assert t.loc[dbrx].notes.startswith("its base was not built: transformers' own defaults do not make it (DbrxConfig()") and pd.isna(t.loc[dbrx].run_py)
    assert "  run_adapter                                  noise     2/2  swap     2/2  100%" in p.stdout, p.stdout[-2000:]
    run_py = t.loc[llama].run_py
    assert "'local_base': True" in run_py and re.search(r"'base_model': 'local:LlamaForCausalLM-[0-9a-f]{8}'", run_py), run_py[:3000]
    from neuron_support.libraries.peft.tiny_adapters import adapter_folder
    from neuron_support.libraries.transformers.tiny_checkpoints import checkpoint_folder
    base = checkpoint_folder(*llama)
    assert not {str(out), str(base), str(base.resolve()), str(base.parents[1])} & set(re.findall(r"'(/[^']*)'", run_py))   # no folder of this machine
    assert str(base.parents[1]) not in run_py and "#        [--base FOLDER]   (FOLDER: the adapter's local base model" in run_py
    folder = run_folder(out / "architecture-runs", PE_PAIR, str(adapter_folder(base)))
    assert (folder / "base").is_symlink() and (folder / "checkpoint").is_symlink()
    outcome = rerun_alone(folder, demo_hub, tmp_path)   # the links copied as folders: run.py finds them beside it
    assert outcome["result"] == "PASS" and outcome["check"] == t.loc[llama].check, outcome


def test_an_adapter_over_two_cores(demo_hub, tmp_path):
    """`neuron-support run ADAPTER --cores 2`: the base loaded over two ranks' tensor-parallel shards and the adapter over it
    (transformers' `load_adapter` on a sharded model) generates; over more than one core the card's check is the English
    judge, and the merged run is judged too, or said to have failed (peft 0.21's merge meets the shards' DTensors), never
    left out of the row's `check`."""
    import shutil
    p = subprocess.run([shutil.which("neuron-support"), "run", LORA, "--library", "peft", "--cores", "2", "--device", "cpu", "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=900, env={**os.environ, **hub_env(demo_hub, tmp_path / "hf")})
    table = read_table(table_path(tmp_path / "out", PE_PAIR))
    row = table.iloc[0]
    assert (row.model_id, row.neuron_cores, row.runner) == (LORA, 2, "run_adapter") and row.result in ("PASS", "FAIL(output)"), (row.result, row.error, p.stderr[-2000:])
    assert "'parallel': 'tp'" in row.run_py and row.english in ("Y", "N") and (pd.isna(row.cpu_match) or row.cpu_match == ""), row
    assert re.fullmatch(r"judge \(more than one core\); merged into its base(: judged English [YN]|, the run failed: \w+Error: .+)", row.check), row.check
