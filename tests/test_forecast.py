"""Issue 60: transformers' forecasting runner. The demo's tiny PatchTST swept through the real command (the session's shared
sweep, tests/conftest.py): its row, the picture of its forecasts beside its notebook and in it, its run.py rerun alone; its
check failing on damaged weights; a forecaster trained to a distribution refused in one line."""
import json, subprocess, sys
from pathlib import Path

import nbformat
import pytest
import torch
import transformers
from safetensors.torch import save_file

from neuron_support.demo import build_demo
from neuron_support.publish import read_table, table_path
from neuron_support.stack import pair_key
from neuron_support.registry import library_stack
from neuron_support.sweep import run_folder
from conftest import rerun_alone, damaged_run

TR = library_stack("transformers", "cpu", found={})
PAIR = pair_key(TR)
MODEL = "neuron-support-demo/tiny-patchtst"
CLI = Path(sys.executable).parent / "neuron-support"


def test_the_demo_sweep_of_the_forecaster(tmp_path, demo_hub, demo_sweep_of_libraries):
    """The tiny PatchTST of the session's sweep: `run_forecast`, one core, PASS with `cpu_match` Y against the CPU; its
    forecasts drawn beside its notebook and shown in it, step by step too; run.py rerun alone gives the same verdict."""
    out, p = demo_sweep_of_libraries   # read only
    assert p.returncode == 0, p.stderr[-3000:]
    row = read_table(table_path(out, PAIR)).set_index("model_id").loc[MODEL]
    assert (row.runner, row.task, row.model_type, row.neuron_cores, row.result, row.check, row.cpu_match) == \
           ("run_forecast", "time-series-forecasting", "patchtst", 1, "PASS", "cpu", "Y"), row[["result", "cpu_match", "notes", "error"]]
    assert row.notes.startswith("forecast on cpu: ") and row.notes.endswith("16 steps of 3 series"), row.notes
    assert "libraries.transformers.time_series" in row.run_py.split("\nPLAN = ")[0] and "def run_dense(" not in row.run_py
    folder = run_folder(out, PAIR, MODEL)
    assert json.loads((folder / "outcome.json").read_text())["images"] == ["forecast.png"]
    assert (folder / "forecast.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    outputs = [o for c in nbformat.read(folder / "run.ipynb", as_version=4).cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs)   # the forecasts, drawn
    steps = [o["data"]["text/html"] for o in outputs if "series 1 CPU fp32" in o.get("data", {}).get("text/html", "")]
    assert len(steps) == 1 and steps[0].count("<tr") == 17, steps   # a head row and the 16 steps
    outcome = rerun_alone(folder, demo_hub, tmp_path)
    assert (outcome["result"], outcome["cpu_match"]) == ("PASS", "Y"), outcome


@pytest.mark.parametrize("how", ["noise", "swap"])
def test_the_forecast_check_fails_on_damaged_weights(how, tmp_path):
    "The test hook `perturb` damages the device's weights: the forecast lands further from fp32's than twice bf16's, and says where."
    outcome, run_py = damaged_run(build_demo() / "models" / MODEL, TR, tmp_path, how)
    assert outcome["result"] == "FAIL(output)" and outcome["check"] == "cpu", outcome
    assert outcome["cpu_match"].startswith("N forecast ") and " over twice bf16's " in outcome["cpu_match"], outcome["cpu_match"]
    assert f"'perturb': '{how}'" in run_py


def test_a_forecaster_trained_to_a_distribution_is_refused_in_one_line(tmp_path):
    "PatchTSMixer with loss nll samples its forecast on the device's generator: the plan says so in one line, exit 2, before any run."
    folder = tmp_path / "mixer-nll"
    config = transformers.PatchTSMixerConfig(loss="nll", context_length=32, prediction_length=8, patch_length=8, patch_stride=8)
    config.architectures = ["PatchTSMixerForPrediction"]
    config.save_pretrained(folder)
    save_file({"w": torch.zeros(2)}, folder / "model.safetensors")
    p = subprocess.run([str(CLI), "run", str(folder), "--out", str(tmp_path / "out"), "--device", "cpu"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert p.returncode == 2, p.stdout[-2000:]
    assert p.stderr.strip().splitlines() == [f"neuron-support: error: model '{folder}' is a probabilistic forecaster (loss 'nll': it draws its forecast "
                                             "from a distribution with the device's generator, which no CPU run repeats): no runner serves it yet "
                                             "(PatchTSMixerForPrediction)"], p.stderr[-3000:]
