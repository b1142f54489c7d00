"""The English judge, measured (issue 18): how often `judge_english` calls broken text English (a false positive) and
fluent English not English (a false negative), on a corpus of its own, `judge_corpus.json` beside this script.

    python benchmarks/judge.py [--judge PATH] [--half tune|held-out|all] [--regenerate]

The corpus holds texts as a model's 32 new tokens read, each labelled with its expected verdict (`english`, Y or N)
and its kind. Fluent (Y): conversational and chat-model answers, technical sentences, lists, prose about code,
sentences cut off mid-way, instructions, story openings, encyclopedia and news sentences. Broken (N): generations of
tiny random-weight models, SmolLM2 with its weights damaged, random tokens, fluent English that turns into random
tokens, word salad of real English words, repetition loops, other languages, tokenizer fragments.

The hand-written texts are data. The generated ones (the kinds in `GENERATED`) are made by `--regenerate`, seeded,
and stored in the same file, so a rerun judges the same texts: random models with SmolLM2's tokenizer (Llama, Qwen2,
Qwen3, GPT-2 configs, hidden size 64, seeds 0..5, greedy 32 tokens from one of `PROMPTS`; seeds 6..8, 8 tokens, the
length of the first measurement's outputs), the judge's own checkpoint with Gaussian noise of each weight's standard
deviation added (seeds 0..5, 32 tokens answering a chat prompt), token ids drawn at random, and fluent openings
followed by 16 random tokens. The same seeds give the same texts with the same torch and transformers (measured with
torch 2.13, transformers 5.24). The word salad is stored as data: the words of six sentences that are not in the corpus,
shuffled, and common English words drawn at random (seeded, once). The kind `other language, short words` was written
after the thresholds were set: both its halves are unseen.

Each kind is split in two halves, alternately by position in the file: `tune` (what the judge's thresholds were
chosen on) and `held-out` (judged only to report). The figures are printed for both halves and for all.
"""
import argparse, json, platform, random, time
from datetime import datetime, timezone
from pathlib import Path

import torch, transformers

from neuron_support.demo import SMOLLM2_ID, build_demo
from neuron_support.libraries.transformers.checks import (JUDGE_MAX_REPETITION, JUDGE_MAX_STRETCH_NLL, JUDGE_MAX_TOKENS_PER_WORD, JUDGE_MIN_ORDER_GAIN, judge_english, load_judge)

CORPUS = Path(__file__).with_name("judge_corpus.json")
GENERATED = ("random model", "random model, 8 tokens", "damaged SmolLM2", "random tokens", "fluent then garbage")
PROMPTS = ("The future of AI is", "Write a short story about a dragon.", "How do I bake bread?", "Explain what a compiler does.",
           "Hello! Who are you?", "List three facts about the Moon.")
OPENINGS = ("The quickest way to learn a new skill is to practise a little every day and",
            "Our hotel was only a short walk from the old town, and the staff were",
            "To install the package, open a terminal and type the following command, then",
            "In the nineteenth century, the city grew rapidly as factories opened along the",
            "I'm glad you asked! The main difference between a virus and a bacterium is that",
            "Once the water boils, add the pasta and stir it gently so that it does not",
            "The report recommends that the council invest in cycling lanes, because",
            "When she reached the top of the hill, she turned around and saw")


def tiny_random_model(arch: str, seed: int, tok):
    "A random-weight tiny causal LM of `arch` with the tokenizer's vocabulary: what a broken conversion generates."
    torch.manual_seed(seed)
    ids = dict(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    if arch == "gpt2":
        config = transformers.GPT2Config(vocab_size=len(tok), n_embd=64, n_layer=2, n_head=4, n_positions=256,
                                         initializer_range=0.02 if seed % 2 == 0 else 0.5, **ids)
        return transformers.GPT2LMHeadModel(config).eval()
    config = transformers.AutoConfig.for_model(arch, vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                                               num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                               head_dim=16, max_position_embeddings=256,
                                               initializer_range=0.02 if seed % 2 == 0 else 0.5, **ids)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


def greedy_text(model, tok, prompt: str, chat: bool, new_tokens: int = 32) -> str:
    "The new tokens, greedy, decoded without special tokens."
    if chat: ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                           return_tensors="pt", return_dict=True)
    else: ids = tok(prompt, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False, pad_token_id=tok.pad_token_id)
    return tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)


def generated_entries(judge_path: str) -> list:
    "The generated broken texts, seeded: the same list on every run."
    tok = transformers.AutoTokenizer.from_pretrained(judge_path)
    rng = random.Random(18)
    random_tokens = lambda n: tok.decode([rng.randrange(200, len(tok)) for _ in range(n)])
    entries = []
    for arch in ("llama", "qwen2", "qwen3", "gpt2"):
        for seed in range(6):
            text = greedy_text(tiny_random_model(arch, seed, tok), tok, PROMPTS[seed], chat=False)
            entries.append({"kind": "random model", "english": "N", "text": text, "source": f"{arch}, seed {seed}"})
        for seed in range(6, 9):
            text = greedy_text(tiny_random_model(arch, seed, tok), tok, PROMPTS[seed - 6], chat=False, new_tokens=8)
            entries.append({"kind": "random model, 8 tokens", "english": "N", "text": text, "source": f"{arch}, seed {seed}"})
    for seed in range(6):
        model = transformers.AutoModelForCausalLM.from_pretrained(judge_path, dtype=torch.float32).eval()
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            with torch.no_grad():
                for p in model.parameters():
                    if p.numel() > 1: p.add_(torch.randn_like(p) * p.std())
        entries.append({"kind": "damaged SmolLM2", "english": "N", "text": greedy_text(model, tok, PROMPTS[seed], chat=True),
                        "source": f"noise of one standard deviation, seed {seed}"})
    entries += [{"kind": "random tokens", "english": "N", "text": random_tokens(32), "source": "token ids 200.. at random"}
                for _ in range(6)]
    entries += [{"kind": "fluent then garbage", "english": "N", "text": f"{o} {random_tokens(16)}",
                 "source": "an opening, then 16 random tokens"} for o in OPENINGS]
    return entries


def regenerate(judge_path: str):
    "Replace the generated entries of the corpus with freshly generated ones (the same, given the seeds)."
    kept = [e for e in json.loads(CORPUS.read_text()) if e["kind"] not in GENERATED]
    CORPUS.write_text(json.dumps(kept + generated_entries(judge_path), indent=1, ensure_ascii=False) + "\n")


def with_halves(entries: list) -> list:
    "Each entry with its half: within a kind, alternately `tune` and `held-out`."
    seen = {}
    for e in entries:
        seen[e["kind"]] = seen.get(e["kind"], -1) + 1
        e["half"] = "tune" if seen[e["kind"]] % 2 == 0 else "held-out"
    return entries


def rate(rows: list) -> str:
    wrong = sum(r["verdict"] != r["english"] for r in rows)
    return f"{wrong}/{len(rows)} ({100 * wrong / len(rows):.1f} %)" if rows else "-"


def margins(rows: list):
    "Per measure: the threshold, the fluent texts' value nearest to it, and how many broken texts it rejects (alone)."
    limits = {"order_gain": (">=", JUDGE_MIN_ORDER_GAIN), "repetition": ("<=", JUDGE_MAX_REPETITION),
              "tokens_per_word": ("<=", JUDGE_MAX_TOKENS_PER_WORD), "worst_stretch": ("<=", JUDGE_MAX_STRETCH_NLL)}
    judged = [r for r in rows if "order_gain" in r["details"]]
    for key, (op, limit) in limits.items():
        if not judged or key not in judged[0]["details"]: continue  # a judge without this measure
        ok = lambda r: r["details"][key] >= limit if op == ">=" else r["details"][key] <= limit
        fluent = [r["details"][key] for r in judged if r["english"] == "Y"]
        rejected = [r for r in judged if r["english"] == "N" and not ok(r)]
        alone = [r for r in rejected if r["details"]["reason"].count(";") == 0]
        print(f"{key:16} must be {op} {limit:<5} fluent {'lowest' if op == '>=' else 'highest'} {(min if op == '>=' else max)(fluent):6.2f}"
              f"   broken rejected {len(rejected):3} ({len(alone)} by this measure alone)")


def report(rows: list):
    "The false-positive and false-negative rates, overall, per half and per kind, and the misjudged texts."
    broken, fluent = [r for r in rows if r["english"] == "N"], [r for r in rows if r["english"] == "Y"]
    print(f"{'':28} {'false positives (broken judged Y)':>36} {'false negatives (fluent judged N)':>36}")
    for half in ("tune", "held-out", None):
        pick = lambda rs: [r for r in rs if half in (None, r["half"])]
        print(f"{half or 'all':28} {rate(pick(broken)):>36} {rate(pick(fluent)):>36}")
    print(f"\n{'kind':28} {'expected':>8} {'misjudged':>16} {'tune':>12} {'held-out':>12}")
    for kind in dict.fromkeys(r["kind"] for r in rows):
        rs = [r for r in rows if r["kind"] == kind]
        print(f"{kind:28} {rs[0]['english']:>8} {rate(rs):>16} {rate([r for r in rs if r['half'] == 'tune']):>12} "
              f"{rate([r for r in rs if r['half'] == 'held-out']):>12}")
    print()
    margins(rows)
    wrong = [r for r in rows if r["verdict"] != r["english"]]
    print(f"\nmisjudged ({len(wrong)}):")
    for r in wrong:
        print(f"- [{r['kind']}, {r['half']}] expected {r['english']}, judged {r['verdict']} ({r['details']}): {r['text']!r}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--judge", help="the judge model's folder (default: the demo catalog's SmolLM2-135M-Instruct)")
    ap.add_argument("--half", choices=("tune", "held-out", "all"), default="all", help="judge only this half of the corpus")
    ap.add_argument("--regenerate", action="store_true", help="generate the generated kinds again and store them in the corpus")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 avoids oversubscription on a shared 2-core box)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    judge_path = args.judge or str(build_demo() / "models" / SMOLLM2_ID)
    if args.regenerate: regenerate(judge_path)
    entries = [e for e in with_halves(json.loads(CORPUS.read_text())) if args.half in ("all", e["half"])]
    start = time.time()
    judge = load_judge(judge_path)
    rows = [{**e, "verdict": (v := judge_english(e["text"], judge=judge))["english"], "details": v["details"]} for e in entries]
    print(f"{datetime.now(timezone.utc):%Y-%m-%d}, {platform.node()}, {torch.get_num_threads()} torch threads, judge {judge_path}: "
          f"{len(rows)} texts ({sum(r['english'] == 'Y' for r in rows)} fluent, {sum(r['english'] == 'N' for r in rows)} broken) "
          f"in {time.time() - start:.1f} s\n")
    report(rows)
