"""Issue 61: peft, the fifth library. Its demo adapters swept through the real command (the session's shared sweep,
tests/conftest.py: local Hub, Ray, papermill) into their own table and pair: LoRAs over the tiny Llama and the tiny
Qwen2.5-VL PASS, unmerged and merged, the same Llama LoRA untrained (B zero) PASS with a row that says its adapter
changes nothing, a prefix-tuning adapter excluded; run.py rerun alone; and an adapter damaged on its own weights
FAIL(output)."""
import json, os, re, subprocess, sys

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
