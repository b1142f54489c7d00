"""Selection against the local Hub: the order, the exclusions, skipping, request counts, retries.

The demo catalog is served by its own server (not HF_ENDPOINT's), so selections over it run in child processes
with `hub_env(endpoint)` (the plan downloads tokenizer configs through huggingface_hub's default endpoint). The
expected list is built here from catalog.json's figures with a formulation of the rule of its own (best rank, then
list order), not with the code under test (a round-robin merge).
"""
import json, math, os, shutil, subprocess, sys, threading, time, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from neuron_support.hub import hub_env, hub_server
from neuron_support.stack import UsageError
from neuron_support.registry import library_stack

TASKS = ["text-generation", "image-text-to-text", "translation", "summarization", "fill-mask", "token-classification",
         "text-classification", "question-answering", "zero-shot-classification", "feature-extraction",
         "sentence-similarity", "text-ranking", "image-classification", "image-feature-extraction", "zero-shot-image-classification",
         "depth-estimation", "image-segmentation", "object-detection", "zero-shot-object-detection", "image-to-text", "automatic-speech-recognition", "audio-classification",
         "time-series-forecasting"]
PAGE = 4  # the test server's page size: every ranking of more than 4 models is paged
EXTRA = "neuron-support-test/bert-as-generator"  # a BERT listed under text-generation: unsupported-task
NOT_VISION = "neuron-support-test/bert-as-image-classifier"  # a BERT listed under image-classification: unsupported-task
NOT_AUDIO = "neuron-support-test/wav2vec2-without-head"  # a Wav2Vec2 encoder listed under automatic-speech-recognition: unsupported-task
PICKLE = "neuron-support-test/tiny-llama-pickle"  # weights only in a float32 pytorch_model.bin: planned from its size
EXPECTED_EXCLUSIONS = {
    "neuron-support-demo/tiny-llama-gptq": ("quantized", "quantization_config.quant_method = 'gptq'"),
    "neuron-support-demo/tiny-llava-bnb": ("quantized", "text_config.quantization_config.quant_method = 'bitsandbytes'"),
    "neuron-support-demo/tiny-custom-code": ("trust-remote-code", "needs trust_remote_code: model_type 'neuron_support_custom'"),
    "neuron-support-demo/giant-405b": ("too-large", "does not fit on 16 cores"),
    "neuron-support-demo/tiny-gated": ("gated", "gated (manual): no Hub token is set"),
    "neuron-support-demo/tiny-no-weights": ("no-weights", "no .safetensors or pytorch_model*.bin file"),
    "neuron-support-demo/tiny-bad-config": ("no-config", "does not parse"),
    EXTRA: ("unsupported-task", "(BertForMaskedLM): no runner generates with it"),
    NOT_VISION: ("unsupported-task", "an image-classification model without an image-classification, image-encoder, zero-shot image, depth-estimation, segmentation or object-detection class "
                                     "(BertForSequenceClassification): no vision runner serves it"),
    NOT_AUDIO: ("unsupported-task", "an automatic-speech-recognition model without a speech-recognition, CTC or audio-classification class "
                                    "(Wav2Vec2Model): no audio runner serves it"),
}
ONE_TENSOR = (lambda h: len(h).to_bytes(8, "little") + h + b"\0\0")(b'{"w":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}')


@pytest.fixture(scope="module")
def select_catalog(demo_catalog, tmp_path_factory) -> Path:
    "The demo catalog (hard links) plus a model that no runner can generate with, a text classifier listed as an image classifier, an encoder listed as a speech recogniser, and one with only a pickle."
    root = tmp_path_factory.mktemp("select-catalog")
    shutil.copytree(demo_catalog / "models", root / "models", copy_function=os.link)
    for id, arch, mt in ((EXTRA, "BertForMaskedLM", "bert"), (NOT_VISION, "BertForSequenceClassification", "bert"), (NOT_AUDIO, "Wav2Vec2Model", "wav2vec2")):
        d = root / "models" / id
        d.mkdir(parents=True)
        (d / "config.json").write_text(json.dumps({"architectures": [arch], "model_type": mt}))
        (d / "model.safetensors").write_bytes(ONE_TENSOR)
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    d = root / "models" / PICKLE
    tiny = LlamaForCausalLM(LlamaConfig(vocab_size=128, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                        num_attention_heads=2, num_key_value_heads=1))
    tiny.config.save_pretrained(d)
    torch.save(tiny.state_dict(), d / "pytorch_model.bin")
    cat = json.loads((demo_catalog / "catalog.json").read_text())
    cat["models"].append({"id": EXTRA, "pipeline_tag": "text-generation", "library_name": "transformers",
                          "downloads": 700_000, "trendingScore": 33})
    cat["models"].append({"id": PICKLE, "pipeline_tag": "text-generation", "library_name": "transformers",
                          "downloads": 650_000, "trendingScore": 31})
    cat["models"].append({"id": NOT_VISION, "pipeline_tag": "image-classification", "library_name": "transformers",
                          "downloads": 480_000, "trendingScore": 11})
    cat["models"].append({"id": NOT_AUDIO, "pipeline_tag": "automatic-speech-recognition", "library_name": "transformers",
                          "downloads": 470_000, "trendingScore": 6})
    (root / "catalog.json").write_text(json.dumps(cat))
    return root


@pytest.fixture(scope="module")
def select_hub(select_catalog):
    with hub_server(select_catalog, page_size=PAGE) as endpoint:
        yield endpoint


CHILD = r'''
import importlib, json, sys, tempfile
from pathlib import Path
from neuron_support.select import sweep_list, list_json, count_requests, default_render
from neuron_support.registry import library_stack
a = json.loads(sys.argv[1])
stack = library_stack("transformers", "cpu", found={})
render = default_render
if a.get("change_runner"):   # a runner whose code changed: load_model with one more line
    from neuron_support import script
    line = '    model = cls.from_pretrained(plan.get("base_path") or path, **kw).eval()'
    changed = script.module_text("transformers").replace(line, '    kw = {**kw}  # a changed runner\n' + line, 1)
    assert changed != script.module_text("transformers")
    render = lambda plan, stack, packages: script.render_run_py(plan, stack, list(packages), module=changed)
with count_requests() as sent:
    sl = sweep_list(stack=stack, data_dir=a.get("data_dir"), max_runs=a.get("max_runs"), render=render)
out = {"list": json.loads(list_json(sl)), "sent": sent, "run_py": {c.model_id: c.run_py for c in sl if c.run_py}}
print("RESULT " + json.dumps(out))
'''


def select_in_child(endpoint, home, token=None, **args) -> dict:
    "Run sweep_list in a child process pointed at `endpoint`; return its list, requests and scripts."
    env = {**os.environ, **hub_env(endpoint, home)}
    env.pop("HF_TOKEN", None)
    if token: env["HF_TOKEN"] = token
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True, text=True, env=env, timeout=600)
    line = next((l for l in p.stdout.splitlines() if l.startswith("RESULT ")), None)
    assert line, p.stdout[-3000:] + p.stderr[-3000:]
    return json.loads(line[len("RESULT "):])


def transformers_models(catalog: dict) -> list:
    "The catalog's models the Hub lists for transformers: its library, or its tag (all-MiniLM-L6-v2 is sentence-transformers')."
    return [m for m in catalog["models"] if m.get("library_name") == "transformers" or "transformers" in m.get("tags", [])]


def expected_list(catalog: dict, selection_size=100, depth=1000) -> tuple:
    "(selection, rest) from catalog.json's figures: best rank in any ranking, ties by the fixed ranking order."
    catalog = {**catalog, "models": transformers_models(catalog)}
    rankings = []
    for task in TASKS:
        for key in ("downloads", "trendingScore"):
            ms = [m for m in catalog["models"] if m["pipeline_tag"] == task]
            values = [m.get(key, 0) for m in ms]
            assert len(set(values)) == len(values), f"ties in {task}/{key}: the server's tie order would decide"
            rankings.append([m["id"] for m in sorted(ms, key=lambda m: -m.get(key, 0))][:depth])

    def best(lists):
        b = {}
        for li, ids in enumerate(lists):
            for r, m in enumerate(ids): b[m] = min(b.get(m, (math.inf, 0)), (r, li))
        return b
    sel_best = best(rankings[:4])
    selection = sorted(sel_best, key=sel_best.get)[:selection_size]
    all_best = best(rankings)
    rest = sorted((m for m in all_best if m not in selection), key=all_best.get)
    return selection, rest


@pytest.fixture(scope="module")
def demo_list(select_hub, tmp_path_factory):
    return select_in_child(select_hub, tmp_path_factory.mktemp("hf"), max_runs=None)


def test_order_is_the_documented_rule(demo_list, select_catalog):
    catalog = json.loads((select_catalog / "catalog.json").read_text())
    selection, rest = expected_list(catalog)
    items = demo_list["list"]["items"]
    assert [i["model_id"] for i in items] == selection + rest
    assert [i["selection_rank"] for i in items] == list(range(1, len(selection) + 1)) + [None] * len(rest)
    assert [i["list_rank"] for i in items] == list(range(1, len(items) + 1))
    assert demo_list["list"]["selection"] == {m: r + 1 for r, m in enumerate(selection)}
    # the check can fail: a plain sort by downloads (another plausible rule) gives another order
    by_downloads = [m["id"] for m in sorted(catalog["models"], key=lambda m: -m["downloads"])]
    assert by_downloads != selection + rest
    # ranks: each model's rank in each ranking of its task, as the catalog's figures give it
    for i in items:
        task_models = [m for m in transformers_models(catalog) if m["pipeline_tag"] == i["task"]]
        for sort, key in (("downloads", "downloads"), ("trending", "trendingScore")):
            order = [m["id"] for m in sorted(task_models, key=lambda m: -m.get(key, 0))]
            assert i["ranks"][f"{i['task']}/{sort}"] == order.index(i["model_id"]) + 1


def test_every_exclusion_category_with_its_reason(demo_list):
    items = {i["model_id"]: i for i in demo_list["list"]["items"]}
    for model_id, (category, reason) in EXPECTED_EXCLUSIONS.items():
        i = items[model_id]
        assert (i["decision"], i["exclusion"]) == ("excluded", category), i
        assert reason in i["reason"], i
        assert i["runner"] is None and i["cores"] is None
    others = [i for m, i in items.items() if m not in EXPECTED_EXCLUSIONS]
    assert others and all(i["decision"] == "run" and i["exclusion"] is None and i["runner"] and i["cores"] for i in others)


def test_demo_request_count(demo_list, select_catalog):
    """The whole demo list: one ranking request per page, one endpoint check, and nothing per model but tokenizer configs
    (and, for the repo with only a pickle, one request for its files' sizes)."""
    catalog = json.loads((select_catalog / "catalog.json").read_text())
    listed = [m for m in catalog["models"] if m["library_name"] == "transformers" or "transformers" in m["tags"]]   # what filter=transformers returns (timm's image classifiers are not)
    per_task = {t: sum(m["pipeline_tag"] == t for m in listed) for t in TASKS}
    pages = sum(2 * math.ceil(n / PAGE) for n in per_task.values() if n)
    sent = demo_list["sent"]
    listings = [u for _, u in sent if "/api/models?" in u and "pipeline_tag=" in u]
    assert len(listings) == pages
    assert all("expand=config" in u and "expand=safetensors" in u and "filter=transformers" in u for u in listings)
    sizes = [u for _, u in sent if "blobs=true" in u.lower()]
    assert len(sizes) == 1 and f"/api/models/{PICKLE}/" in sizes[0], sizes
    others = [(m, u) for m, u in sent if u not in listings + sizes and not u.endswith("/api/models?limit=1")
              and not u.endswith("/api/agent-harnesses")]
    assert all(u.endswith("/tokenizer_config.json") for _, u in others), others
    assert demo_list["list"]["requests"] == len(sent)
    print(f"\ndemo list: {len(demo_list['list']['items'])} models, {len(sent)} requests ({pages} listing pages of {PAGE})")


def test_gated_runs_with_a_token_that_may_read_it(select_hub, tmp_path):
    from neuron_support.demo import GATED_TOKEN
    got = select_in_child(select_hub, tmp_path / "hf", token=GATED_TOKEN, max_runs=None)
    items = {i["model_id"]: i for i in got["list"]["items"]}
    assert items["neuron-support-demo/tiny-gated"]["decision"] == "run"
    heads = [u for m, u in got["sent"] if m == "HEAD" and "/tiny-gated/resolve/" in u]
    assert len(heads) == 1  # the one per-model request of a gated repo
    wrong = select_in_child(select_hub, tmp_path / "hf2", token="not-the-reader", max_runs=None)
    i = {i["model_id"]: i for i in wrong["list"]["items"]}["neuron-support-demo/tiny-gated"]
    assert (i["exclusion"], "may not read it (HTTP 403)" in i["reason"]) == ("gated", True)


def test_skip_if_unchanged(select_hub, tmp_path):
    from neuron_support.publish import synthetic_row, table_path, write_table, frame
    data = tmp_path / "data-dir"
    first = select_in_child(select_hub, tmp_path / "hf", data_dir=str(data), max_runs=3)
    runs = [i["model_id"] for i in first["list"]["items"] if i["decision"] == "run"]
    assert len(runs) == 3
    pair, done, changed = first["list"]["pair"], runs[0], runs[1]
    rows = [synthetic_row(done, pair=pair, run_py=first["run_py"][done]),
            synthetic_row(changed, pair=pair, run_py=first["run_py"][changed].replace("PLAN", "PLAN_OLD", 1))]
    write_table(frame(rows), table_path(data, pair))
    again = select_in_child(select_hub, tmp_path / "hf", data_dir=str(data), max_runs=3)
    items = {i["model_id"]: i for i in again["list"]["items"]}
    assert items[done]["decision"] == "skip" and "run.py unchanged" in items[done]["reason"]
    assert items[changed]["decision"] == "run" and "run.py changed" in items[changed]["reason"]
    assert sum(i["decision"] == "run" for i in items.values()) == 3  # the list goes one model further
    assert len(again["list"]["items"]) > len([i for i in first["list"]["items"]])
    runner_changed = select_in_child(select_hub, tmp_path / "hf", data_dir=str(data), max_runs=3, change_runner=True)
    i = {i["model_id"]: i for i in runner_changed["list"]["items"]}[done]
    assert i["decision"] == "run" and "run.py changed" in i["reason"]


def test_listing_plan_is_make_plan(select_hub, select_catalog, tmp_path):
    "The plan built from the listing equals make_plan's, which downloads, for every model that would run."
    code = r'''
import json
from dataclasses import asdict
from huggingface_hub import HfApi
from neuron_support.registry import make_plan
from neuron_support.select import listing_plan, EXPAND
from neuron_support.libraries.transformers.library import TASKS, transformers_exclusion as exclusion
from neuron_support.registry import library_stack
stack, api, bad, n, pickled = library_stack("transformers", "cpu", found={}), HfApi(), [], 0, None
for t in TASKS:
    for info in api.list_models(filter="transformers", pipeline_tag=t, expand=EXPAND):
        if exclusion(info, stack, None, 16, api)[0]: continue
        n += 1
        a, b = asdict(listing_plan(info, stack)), asdict(make_plan(info.id, stack, info.sha))
        if a != b: bad.append([info.id, a, b])
        if info.id == PICKLE: pickled = [a["weight_bytes"], a["fit"]]
print("RESULT " + json.dumps({"n": n, "bad": bad, "pickled": pickled}))
'''.replace("PICKLE", repr(PICKLE))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env={**os.environ, **hub_env(select_hub, tmp_path / "hf")})
    line = next((l for l in p.stdout.splitlines() if l.startswith("RESULT ")), None)
    assert line, p.stderr[-3000:]
    got = json.loads(line[7:])
    assert got["n"] >= 15 and got["bad"] == []
    weight_bytes, fit = got["pickled"]   # float32 in the pickle: about half its size in bf16
    assert weight_bytes == (select_catalog / "models" / PICKLE / "pytorch_model.bin").stat().st_size // 2
    assert "estimated from the size of its pytorch_model*.bin files" in fit


# --- in-process tests, against the session's `hub` (HF_ENDPOINT) ---

class FlakyProxy(BaseHTTPRequestHandler):
    "Forwards to the Hub, but answers the first listings with 429 and 503, as a busy Hub does."
    failures = [429, 503]

    def log_message(self, *a): pass

    def do_GET(self):
        if "pipeline_tag=" in self.path and self.server.failures:
            code = self.server.failures.pop(0)
            self.server.refused.append(code)
            self.send_response(code); self.send_header("Retry-After", "0"); self.send_header("Content-Length", "0")
            self.end_headers(); return
        with urllib.request.urlopen(self.server.target + self.path) as r:
            body, headers = r.read(), r.headers
        self.send_response(200)
        for k in ("Content-Type", "Link"):
            if headers.get(k): self.send_header(k, headers[k].replace(self.server.target, f"http://127.0.0.1:{self.server.server_address[1]}"))
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)


def test_retries_on_429_and_503(hub):
    from neuron_support.select import count_requests, sweep_list
    server = ThreadingHTTPServer(("127.0.0.1", 0), FlakyProxy)
    server.target, server.failures, server.refused = hub, list(FlakyProxy.failures), []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proxy = f"http://127.0.0.1:{server.server_address[1]}"
        with count_requests() as via_proxy:
            sl = sweep_list(stack=library_stack("transformers", "cpu", found={}), endpoint=proxy, max_runs=None)
        with count_requests() as direct_sent:
            direct = sweep_list(stack=library_stack("transformers", "cpu", found={}), endpoint=hub, max_runs=None)
    finally:
        server.shutdown()
    assert server.refused == [429, 503]
    assert [(c.model_id, c.decision) for c in sl] == [(c.model_id, c.decision) for c in direct]
    listings = lambda sent: [u for _, u in sent if "pipeline_tag=" in u]
    assert len(listings(via_proxy)) == len(listings(direct_sent)) + 2  # the two refused requests, retried


def test_unreachable_hub_is_one_clear_error():
    from neuron_support.select import sweep_list
    t = time.monotonic()
    with pytest.raises(UsageError, match=r"cannot reach the Hub at http://127.0.0.1:9 .*HF_ENDPOINT"):
        sweep_list(stack=library_stack("transformers", "cpu", found={}), endpoint="http://127.0.0.1:9")
    assert time.monotonic() - t < 10


def test_not_a_hub_is_one_clear_error(tmp_path):
    from neuron_support.select import sweep_list
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)  # answers 501 to everything
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(UsageError, match="does not answer like a Hub"):
            sweep_list(stack=library_stack("transformers", "cpu", found={}), endpoint=f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()


def test_synthetic_catalog_request_count(tmp_path):
    "1,000 models over 12 tasks: the whole list costs one request per listing page and the endpoint check."
    from neuron_support.select import count_requests, sweep_list, synthetic_catalog
    cat = synthetic_catalog(tmp_path / "synthetic", 1000, seed=3)
    models = json.loads((cat / "catalog.json").read_text())["models"]
    page = 100
    with hub_server(cat, page_size=page) as endpoint, count_requests() as sent:
        sl = sweep_list(stack=library_stack("transformers", "cpu", found={}), endpoint=endpoint, max_runs=None)
    counts = {t: sum(m["pipeline_tag"] == t for m in models) for t in TASKS}
    pages = sum(2 * math.ceil(n / page) for n in counts.values() if n)
    listings = [u for _, u in sent if "pipeline_tag=" in u]
    assert len(listings) == pages
    assert len(sl) == len(models)
    assert {c.exclusion for c in sl} >= {None, "quantized", "trust-remote-code", "gated"}
    assert len(sent) - len(listings) <= 2  # the endpoint check (and huggingface_hub's agent-harnesses probe)
    print(f"\nsynthetic 1000: {len(sl)} models, {len(sent)} requests, {pages} listing pages of {page}")


def test_limit_stops_after_n_runs_and_fetches_only_what_it_needs(hub):
    from neuron_support.select import count_requests, sweep_list
    with count_requests() as sent:
        sl = sweep_list(stack=library_stack("transformers", "cpu", found={}), endpoint=hub, max_runs=2)
    assert sum(c.decision == "run" for c in sl) == 2 and sl.items[-1].decision == "run"
    assert not any("pipeline_tag=fill-mask" in u for _, u in sent)  # the list ended inside the selection
    with pytest.raises(UsageError, match="0 or more"):
        sweep_list(stack=library_stack("transformers", "cpu", found={}), endpoint=hub, max_runs=-1)
