"""Issue 26: what a checkpoint's text, an output folder or a previous run cannot do to a run.

- A checkpoint's text never chooses what pip installs: a `model_type` that carries `pip install <name>` starts no pip
  (pip is pointed at a local index that records every request) and the row is transformers' own `FAIL(load)`; a
  package that transformers itself names (a SentencePiece tokenizer's) is still asked of pip.
- An output folder nobody can write (root included: `chattr +i`) is one line and a non-zero exit for `run` and `sweep`.
- A run's folder holds only what that run wrote: a pipeline that drew its pictures, then fails on its next run into the
  same folder, leaves no picture behind, and neither the CLI nor the app shows one.
"""
import http.server, json, os, re, shutil, subprocess, sys, threading
from pathlib import Path

import pytest

from conftest import real_tokenizer_folder
from neuron_support.publish import COLUMNS, dataset_files, read_table, table_path
from neuron_support.plan import checkpoint_name
from neuron_support.stack import pair_key
from neuron_support.registry import library_stack
from neuron_support.sweep import run_folder

CLI = shutil.which("neuron-support")
STACK = library_stack("transformers", "cpu", found={})
PICTURE = re.compile(r"<img[^>]*image(?:_cpu)?\.png")   # a run's picture shown on a page
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")   # escape codes and other control characters


def tiny_llama(folder: Path, kv_heads: int = 1, **config) -> Path:
    "A tiny random Llama with a real WordPiece tokenizer (2 key-value heads shard over 2 ranks); `config` overrides keys of its config.json."
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    tok = AutoTokenizer.from_pretrained(real_tokenizer_folder())
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                 num_attention_heads=2, num_key_value_heads=kv_heads, max_position_embeddings=64,
                                 pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id)
                     ).to(torch.bfloat16).save_pretrained(folder)
    tok.save_pretrained(folder)
    if config:
        path = folder / "config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **config}))
    return folder


class RecordingIndex(http.server.BaseHTTPRequestHandler):
    "A package index that has nothing and remembers every path pip asked for."
    asked: list = []
    def do_GET(self):
        RecordingIndex.asked.append(self.path)
        self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *args): pass


@pytest.fixture
def recording_index():
    "The address of a recording index, and the paths asked of it; pip's configuration files and local wheels are off."
    RecordingIndex.asked = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RecordingIndex)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {"PIP_INDEX_URL": f"http://127.0.0.1:{server.server_port}/simple/", "PIP_CONFIG_FILE": os.devnull,
           "PIP_FIND_LINKS": "", "PIP_EXTRA_INDEX_URL": "", "PIP_RETRIES": "0"}
    yield env, RecordingIndex.asked
    server.shutdown()


def run_cli(*args, env=None, timeout=900):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def only_row(out: Path, stack=STACK) -> dict:
    table = read_table(table_path(out, pair_key(stack)))
    assert len(table) == 1, table
    return table.iloc[0].to_dict()


def test_a_checkpoint_cannot_choose_what_pip_installs(tmp_path, recording_index):
    "`model_type: 'zz pip install zzprobepkg'`: transformers quotes it in its error; no pip is asked, the row is FAIL(load)."
    env, asked = recording_index
    ckpt = tiny_llama(tmp_path / "ckpt", model_type="zz pip install zzprobepkg")
    p = run_cli("run", ckpt, "--out", tmp_path / "out", env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert asked == [], asked   # pip never reached an index: no package was installed, nor even looked up
    assert "installing them" not in p.stdout and "zzprobepkg: " not in p.stdout, p.stdout[-3000:]
    row = only_row(tmp_path / "out")
    assert row["result"] == "FAIL(load)", row
    assert "has model type `zz pip install zzprobepkg` but Transformers does not recognize this architecture" in row["error"]
    assert not (run_folder(tmp_path / "out", pair_key(STACK), str(ckpt)) / "site").exists()
    for column, value in row.items():
        if isinstance(value, str) and column != "run_py": assert not CONTROL.search(value.replace("\n", "").replace("\t", "")), (column, value)
    assert set(row) >= set(COLUMNS[:5])


def test_a_package_the_library_names_is_still_asked_for(tmp_path, recording_index):
    """A tokenizer that is only a SentencePiece `tokenizer.model`: transformers asks for tiktoken, the run reads the file
    and asks pip for sentencepiece, by transformers' own name for it. The recording index has nothing, so pip's failure is
    the row (FAIL(other), with pip's reason), and the index saw the request."""
    env, asked = recording_index
    ckpt = tiny_llama(tmp_path / "spm")
    for name in ("tokenizer.json", "vocab.txt", "special_tokens_map.json"): (ckpt / name).unlink(missing_ok=True)
    (ckpt / "tokenizer.model").write_bytes(b"\n\x0b\n\x05<unk>\x15\x00\x00\x00\x00\x18\x02")
    (ckpt / "tokenizer_config.json").write_text('{"tokenizer_class": "LlamaTokenizer"}')
    p = run_cli("run", ckpt, "--out", tmp_path / "out", env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "loading needs sentencepiece: installing them" in p.stdout, p.stdout[-3000:]
    assert any(path.startswith("/simple/sentencepiece/") for path in asked), asked
    row = only_row(tmp_path / "out")
    assert row["result"] == "FAIL(other)" and row["notes"].startswith("pip could not resolve sentencepiece"), row


@pytest.fixture
def immutable(tmp_path):
    "A folder that not even root can write in (`chattr +i`); skipped where the file system has no such attribute."
    folder = tmp_path / "locked"
    folder.mkdir()
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
        pytest.skip("chattr +i is not supported here")
    yield folder
    subprocess.run(["chattr", "-i", str(folder)])


def test_an_unwritable_out_folder_is_one_line(tmp_path, immutable):
    "`run` and `sweep` on a folder they cannot write in, or under one: one line on stderr, exit 2, nothing written."
    ckpt = tiny_llama(tmp_path / "ckpt")
    for args in (["run", ckpt, "--out", immutable], ["run", ckpt, "--out", immutable / "new"],
                 ["sweep", "--demo", "--out", immutable], ["sweep", "--demo", "--out", immutable / "new" / "deeper"]):
        p = run_cli(*args, timeout=300)
        assert p.returncode == 2, (args, p.stdout[-2000:], p.stderr[-2000:])
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, (args, p.stderr)
        assert "cannot write in" in p.stderr and str(immutable) in p.stderr, p.stderr
    assert list(immutable.iterdir()) == []


def test_a_run_folder_keeps_no_older_pictures(tmp_path, demo_catalog):
    """A pipeline that drew its pictures (PASS), then a new version of it that fails to load, run into the same folder:
    no picture is left, the CLI names none, publish uploads none, and the app's page of the model shows none."""
    from neuron_support.app import load_results
    stack = library_stack("diffusers", "cpu", found={})
    pipeline = tmp_path / "tiny-sd"
    shutil.copytree(demo_catalog / "models" / "neuron-support-demo" / "tiny-sd", pipeline)
    out = tmp_path / "out"
    first = run_cli("run", pipeline, "--library", "diffusers", "--out", out)
    assert first.returncode == 0 and re.search(r"^PASS  ", first.stdout, re.M), first.stdout[-3000:] + first.stderr[-3000:]
    folder = run_folder(out, pair_key(stack), str(pipeline))   # runs/<pair>/local:tiny-sd-<hash>: the name its row goes by
    assert sorted(p.name for p in folder.glob("image*.png")) == ["image.png", "image_cpu.png"]
    status, html = load_results(str(out), popularity=False).model_page(checkpoint_name(str(pipeline)))
    assert status == 200 and len(PICTURE.findall(html)) == 2, html[-3000:]   # the page shows the pictures a run drew
    # the new version: its UNet's weights cut short after their header, so that loading fails before anything is drawn
    weights = next((pipeline / "unet").glob("*.safetensors"))
    data = weights.read_bytes()
    weights.write_bytes(data[:8 + int.from_bytes(data[:8], "little") + 16])
    second = run_cli("run", pipeline, "--library", "diffusers", "--out", out)
    assert second.returncode == 0, second.stderr[-3000:]
    assert only_row(out, stack)["result"] == "FAIL(load)"
    assert list(folder.glob("image*.png")) == [], sorted(p.name for p in folder.iterdir())
    files_line = next(l for l in second.stdout.splitlines() if l.startswith("notebook, "))
    assert files_line.startswith(f"notebook, run.py and result.json in {folder}"), files_line
    assert not [f for f in dataset_files(out, "org/name") if f.endswith(".png")]
    status, html = load_results(str(out), popularity=False).model_page(checkpoint_name(str(pipeline)))
    assert status == 200 and PICTURE.findall(html) == [], PICTURE.findall(html)
