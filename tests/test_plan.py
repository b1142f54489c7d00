"""The plan of a local checkpoint whose safetensors header cannot be read (issue 26), or whose declared class is of a task no
runner serves yet (issue 60): `neuron-support run` refuses it at the plan, in one line on stderr, before any model runs,
and writes no row.

The checkpoints are a tiny Llama's config.json beside a hand-written bad model.safetensors; the command is the real one,
in a child process.
"""
import json, os, subprocess, sys
from pathlib import Path

import pytest
import torch
import transformers
from safetensors.torch import save_file
from transformers import LlamaConfig

CLI = Path(sys.executable).parent / "neuron-support"


def one_header(header) -> bytes:
    "A .safetensors file of this header (any JSON value) and 4 bytes of data."
    h = json.dumps(header).encode()
    return len(h).to_bytes(8, "little") + h + bytes(4)


BAD_WEIGHTS = {  # name -> (model.safetensors, what the one line says)
    "no-dtype": (one_header({"w": {"shape": [2], "data_offsets": [0, 4]}}), "gives tensor 'w' as {\"shape\": [2]"),
    "a-list": (one_header([{"dtype": "BF16", "shape": [2]}]), "the header of model.safetensors is a JSON list, not an object"),
    "string-shape": (one_header({"w": {"dtype": "BF16", "shape": "2", "data_offsets": [0, 4]}}), "a shape of non-negative integers"),
    "length-2-62": ((2**62).to_bytes(8, "little") + b"{}", "gives its header a length of 4611686018427387904 bytes, more than the file holds (10 bytes)"),
    "three-bytes": (b"abc", "model.safetensors is 3 bytes: too short for a safetensors header"),
}


@pytest.mark.parametrize("name", list(BAD_WEIGHTS))
def test_run_refuses_an_unreadable_header_in_one_line(name, tmp_path):
    weights, why = BAD_WEIGHTS[name]
    folder = tmp_path / name
    LlamaConfig(vocab_size=128, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=1).save_pretrained(folder)
    (folder / "model.safetensors").write_bytes(weights)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    p = subprocess.run([str(CLI), "run", str(folder), "--out", str(out), "--device", "cpu"], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=600)
    assert p.returncode != 0, p.stdout[-2000:]
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr[-3000:]
    assert lines[0].startswith(f"neuron-support: error: model '{folder}' has no loadable weights: ") and why in lines[0], lines[0]
    assert not list(out.rglob("*.parquet")) and not list(out.rglob("result.json")) and not list(out.rglob("run.ipynb"))


# The Hub's tasks no runner serves yet (issue 60): each checkpoint's config as transformers writes it, its declared class, and what the
# one line says it gives. Before, the first two ran as a bare encoder and the third was called an audio chat model (PatchTST and PatchTSMixer trained to a point, and TimesFM, are `run_forecast`'s now: tests/test_forecast.py).
UNSERVED = {  # name -> (config class, declared class, what the one line says)
    "vits": ("VitsConfig", "VitsModel", "is a text-to-speech or text-to-audio model (a waveform, a spectrogram or audio codes out, not text)"),
    "informer": ("InformerConfig", "InformerForPrediction", "is a time-series model (a series of values in; a forecast, a class or a value out)"),
    "clap": ("ClapConfig", "ClapModel", "is a zero-shot audio classifier (a clip scored against text labels, CLAP's kind)"),
}


@pytest.mark.parametrize("name", list(UNSERVED))
def test_run_names_what_an_unserved_task_gives_in_one_line(name, tmp_path):
    config_class, arch, said = UNSERVED[name]
    folder = tmp_path / name
    config = getattr(transformers, config_class)()
    config.architectures = [arch]
    config.save_pretrained(folder)
    save_file({"w": torch.zeros(2)}, folder / "model.safetensors")   # readable weights: the plan refuses it for its task, not its files
    out = tmp_path / "out"
    p = subprocess.run([str(CLI), "run", str(folder), "--out", str(out), "--device", "cpu"], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert p.returncode == 2, p.stdout[-2000:]
    assert p.stderr.strip().splitlines() == [f"neuron-support: error: model '{folder}' {said}: no runner serves it yet ({arch})"], p.stderr[-3000:]
    assert not out.exists() or not list(out.rglob("run.ipynb"))


# A config whose runner-choosing fields are not what transformers writes (issue 57's hostile inputs): before, a string was read as
# its first letter ("V", an encoder, exit 0), a number crashed the plan with an AttributeError's traceback, a nested list with a TypeError's.
BAD_DECLARED = {  # name -> (config.json's fields, what the one line says)
    "a-string": ({"architectures": "VitsModel"}, 'its architectures is "VitsModel", not a list of class names'),
    "a-number": ({"architectures": [123]}, "its architectures is [123], not a list of class names"),
    "nested": ({"architectures": [["VitsModel"]]}, 'its architectures is [["VitsModel"]], not a list of class names'),
    "model-type": ({"model_type": ["llama"]}, 'its model_type is ["llama"], not a name'),
}


@pytest.mark.parametrize("name", list(BAD_DECLARED))
def test_run_refuses_a_config_that_declares_no_class_names_in_one_line(name, tmp_path):
    fields, said = BAD_DECLARED[name]
    folder = tmp_path / name
    config = LlamaConfig(vocab_size=128, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1)
    config.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps({**json.loads((folder / "config.json").read_text()), **fields}))
    save_file({"w": torch.zeros(2)}, folder / "model.safetensors")
    out = tmp_path / "out"
    p = subprocess.run([str(CLI), "run", str(folder), "--out", str(out), "--device", "cpu"], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert p.returncode == 2, p.stdout[-2000:]
    assert p.stderr.strip().splitlines() == [f"neuron-support: error: malformed config.json in '{folder}': {said}"], p.stderr[-3000:]
    assert not out.exists() or not list(out.rglob("run.ipynb"))
