"""What the reference cache saves (issue 5): the CPU fp32 reference of the real SmolLM2-135M-Instruct, computed, then
read back from the cache, for the generation (32 tokens, the card's prompt as a chat message) and for an encoder
(all-MiniLM-L6-v2, fp32 and bf16 forward passes at 128 tokens).

    python benchmarks/reference_cache.py [--repeat 3] [--threads 1]

Each repetition uses a fresh, empty cache folder: the first call computes (loading the checkpoint included) and writes
the file, the second reads it. Prints the median of each and their ratio, with the machine and the date.
"""
import argparse, os, platform, statistics, tempfile, time
from datetime import datetime, timezone

import torch, transformers

from neuron_support.libraries.transformers.checks import encoder_reference, generation_reference
from neuron_support.demo import MINILM_ID, SMOLLM2_ID, build_demo


def measure(call, repeat: int) -> tuple:
    "Median seconds of a computing call and of a cached call, each in a fresh cache folder."
    computed, cached = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            first, second = call(cache), call(cache)
            assert not first["cached"] and second["cached"]
            computed.append(first["seconds"]); cached.append(second["seconds"])
    return statistics.median(computed), statistics.median(cached)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 avoids oversubscription on a shared 2-core box)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    catalog = build_demo()
    smol, minilm = catalog / "models" / SMOLLM2_ID, catalog / "models" / MINILM_ID
    tok = transformers.AutoTokenizer.from_pretrained(smol)
    ids = tok.apply_chat_template([{"role": "user", "content": "The future of AI is"}], add_generation_prompt=True,
                                  tokenize=True, return_dict=True)["input_ids"]
    key = {"model_id": SMOLLM2_ID, "revision": "demo", "torch": torch.__version__, "transformers": transformers.__version__}
    gen = measure(lambda cache: generation_reference(str(smol), ids, 32, cache, key), args.repeat)
    etok = transformers.AutoTokenizer.from_pretrained(minilm)
    inputs = dict(etok("My name is Wolfgang and I live in Berlin.", padding="max_length", max_length=128, return_tensors="pt"))
    enc = measure(lambda cache: encoder_reference(str(minilm), None, inputs, cache, {**key, "model_id": MINILM_ID}), args.repeat)
    print(f"{datetime.now(timezone.utc):%Y-%m-%d} {platform.machine()} {os.cpu_count()} cores, torch {torch.__version__}, "
          f"{args.threads} thread(s), load average {os.getloadavg()[0]:.1f}, median of {args.repeat}")
    for name, (computed, cached) in (("generation, SmolLM2-135M-Instruct, 32 tokens", gen),
                                     ("encoder, all-MiniLM-L6-v2, fp32 + bf16", enc)):
        print(f"{name}: computed {computed:.2f} s, cached {cached:.3f} s, {computed / cached:.0f}x faster")
