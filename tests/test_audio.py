"""Issue 30: transformers' audio runners. The demo's Whisper, Wav2Vec2 CTC and AST swept through the real command (the
session's shared sweep, tests/conftest.py), their notebooks holding the player, the waveform and both transcripts, the
Whisper's run.py rerun alone, and each check failing on damaged weights."""
import json, re

import nbformat
import pytest

from neuron_support.demo import build_demo
from neuron_support.publish import read_table, table_path
from neuron_support.stack import pair_key
from neuron_support.registry import library_stack
from neuron_support.sweep import run_folder
from conftest import rerun_alone, damaged_run

TR = library_stack("transformers", "cpu", found={})
PAIR = pair_key(TR)
DEMO = "neuron-support-demo"
AUDIO = {f"{DEMO}/tiny-whisper": ("run_speech_seq2seq", "automatic-speech-recognition"), f"{DEMO}/tiny-wav2vec2-ctc": ("run_ctc", "automatic-speech-recognition"),
         f"{DEMO}/tiny-ast": ("run_audio_classifier", "audio-classification")}


def test_the_demo_sweep_of_the_audio_models(tmp_path, demo_hub, demo_sweep_of_libraries):
    """Each audio model of the session's sweep: its runner, one core, PASS, `cpu_match` Y or a near-tie against the CPU; the
    clip and its waveform beside its notebook, and the notebook holding the player, the waveform and both transcripts."""
    out, p = demo_sweep_of_libraries   # read only
    assert p.returncode == 0, p.stderr[-3000:]
    table = read_table(table_path(out, PAIR)).set_index("model_id")
    for model, (runner, task) in AUDIO.items():
        row = table.loc[model]
        assert (row.runner, row.task, row.neuron_cores, row.result, row.check) == (runner, task, 1, "PASS", "cpu"), row[["result", "notes", "error"]]
        assert row.cpu_match == "Y" or row.cpu_match.startswith("~ near-tie"), row.cpu_match
        assert "libraries.transformers.audio" in row.run_py.split("\nPLAN = ")[0] and "def run_dense(" not in row.run_py
        folder = run_folder(out, PAIR, model)
        assert json.loads((folder / "outcome.json").read_text())["images"] == ["waveform.png", "input.wav"]
        assert (folder / "input.wav").read_bytes()[:4] == b"RIFF" and len((folder / "input.wav").read_bytes()) == 93832
        outputs = [o for c in nbformat.read(folder / "run.ipynb", as_version=4).cells if c.cell_type == "code" for o in c.get("outputs", [])]
        assert any("<audio" in o.get("data", {}).get("text/html", "") for o in outputs), model   # the player
        assert any("image/png" in o.get("data", {}) for o in outputs), model                      # the waveform
        printed = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
        if runner != "run_audio_classifier": assert re.search(r'transcript on cpu: ".*" \| CPU fp32: ".*"', printed), model
    whisper = table.loc[f"{DEMO}/tiny-whisper"]
    assert whisper.graphs == 3   # the encoder's one, and the decoder's two: a prefill of the forced tokens, then one token a step
    # the step table of the generation rule, as a text generation's
    steps = [o["data"]["text/html"] for c in nbformat.read(run_folder(out, PAIR, f"{DEMO}/tiny-whisper") / "run.ipynb", as_version=4).cells
             if c.cell_type == "code" for o in c.get("outputs", []) if "<th>gap</th>" in o.get("data", {}).get("text/html", "")]
    assert len(steps) == 1
    assert table.loc[f"{DEMO}/tiny-ast", "notes"].split(" (")[0] in {"Speech", "Music", "Dog", "Vehicle", "Silence"}
    # run.py stands alone: rerun outside the sweep, in a copy of its folder, it prints the same verdict
    outcome = rerun_alone(run_folder(out, PAIR, f"{DEMO}/tiny-whisper"), demo_hub, tmp_path)
    assert (outcome["result"], outcome["cpu_match"], outcome["notes"]) == ("PASS", whisper.cpu_match, whisper.notes)


@pytest.mark.parametrize("model, want", [("tiny-whisper", r"N first differs at token 1: "), ("tiny-wav2vec2-ctc", r"N first differs at frame \d+: "),
                                         ("tiny-ast", r"N differs: ")])
def test_each_audio_check_fails_on_damaged_weights(model, want, tmp_path):
    "The test hook `perturb` damages the device's weights: the transcript's, the CTC frames' and the classifier's checks each say N."
    outcome, run_py = damaged_run(build_demo() / "models" / DEMO / model, TR, tmp_path)
    assert outcome["result"] == "FAIL(output)" and outcome["check"] == "cpu", outcome
    assert re.match(want, outcome["cpu_match"]), outcome["cpu_match"]
    assert "'perturb': 'noise'" in run_py
