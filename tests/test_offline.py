"""Issue 28, item 5: a run whose models are in the cache does not wait on a Hub it cannot reach.

A two-rank run of a local checkpoint is judged by SmolLM2-135M-Instruct, loaded by its Hub id from a warm cache. With
the endpoint refusing connections, huggingface_hub would wait out its retry backoff on each of the judge's files before
using the cache ("Could not reach the Hub ... Using cached commit hash", minutes in all); the run asks the endpoint
once, says in one line that it did not answer, and reads the cache at once.
"""
import os, shutil, subprocess, sys

from conftest import free_port
from test_hardening import only_row, tiny_llama
from neuron_support.hub import hub_env
from neuron_support.facts import JUDGE_MODEL

RETRY_FALLBACK = "Could not reach the Hub"   # huggingface_hub's line when it gave up on the Hub and used the cache


def test_an_unreachable_hub_is_asked_once_and_the_cache_read(tmp_path, demo_hub):
    hf_home = tmp_path / "hf"
    warm = subprocess.run([sys.executable, "-c", f"from huggingface_hub import snapshot_download; snapshot_download({JUDGE_MODEL!r})"],
                          env={**os.environ, **hub_env(demo_hub, hf_home)}, capture_output=True, text=True, timeout=300)
    assert warm.returncode == 0, warm.stderr[-2000:]
    ckpt = tiny_llama(tmp_path / "ckpt", kv_heads=2)
    dead = f"http://127.0.0.1:{free_port()}"   # nothing listens there: every connection is refused
    p = subprocess.run([shutil.which("neuron-support"), "run", str(ckpt), "--cores", "2", "--out", str(tmp_path / "out")],
                       env={**os.environ, **hub_env(dead, hf_home)}, capture_output=True, text=True, timeout=900,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    said = p.stdout + p.stderr
    assert f"the Hub at {dead} does not answer: reading the local cache only (HF_HUB_OFFLINE=1)" in said, said[-3000:]
    assert said.count("does not answer") == 1   # asked once, by run.py, not by each rank
    assert RETRY_FALLBACK not in said, said[-3000:]   # no file waited out the retries
    row = only_row(tmp_path / "out")
    assert row["neuron_cores"] == 2 and row["check"].startswith("judge") and row["english"] in ("Y", "N"), row
