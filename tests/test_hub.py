"""The local Hub with the real clients: huggingface_hub, transformers, pandas (HfFileSystem), over real HTTP on
127.0.0.1 to a server in a child process (fixtures in conftest.py)."""
import concurrent.futures, hashlib, json, os, re, socket, subprocess, sys, time, urllib.error, urllib.request
from pathlib import Path

import pandas as pd
import pytest
import torch
from huggingface_hub import HfApi, get_safetensors_metadata, hf_hub_download, snapshot_download
from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError, HfHubHTTPError, RemoteEntryNotFoundError,
                                    RepositoryNotFoundError, RevisionNotFoundError)

from conftest import GATED_TOKEN, HUB_PAGE_SIZE, ORG
from neuron_support.hub import hub_env, hub_server, serve_catalog
from neuron_support.stack import UsageError

WRITE_TOKEN = "hf_local_test_writer"  # the local Hub accepts any token for writes
LLAMA = f"{ORG}/tiny-llama-a"
DTYPES = {torch.bfloat16: "BF16", torch.float32: "F32", torch.float16: "F16"}
TEXT_GENERATION_BY_DOWNLOADS = [f"{ORG}/{n}" for n in ("tiny-llama-a", "tiny-llama-b", "tiny-llama-c", "tiny-llama-d",
                                                        "tiny-llama-e", "gated-llama", "too-large")]


def http(url, method="GET", **headers):
    "(status, headers, body) of one request, errors included."
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method, headers=headers), timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def test_clients_point_at_the_local_hub(hub):
    import huggingface_hub.constants
    assert huggingface_hub.constants.ENDPOINT == hub and HfApi().endpoint == hub


def test_list_models_in_download_order_across_pages(hub):
    models = list(HfApi().list_models(filter="transformers", pipeline_tag="text-generation", sort="downloads",
                                      expand=["safetensors", "config", "tags"]))
    assert [m.id for m in models] == TEXT_GENERATION_BY_DOWNLOADS  # not tiny-bert (fill-mask), not gguf-only
    assert len(models) > 2 * HUB_PAGE_SIZE  # so the client followed at least two Link headers
    first = models[0]
    assert first.config["model_type"] == "llama" and "llama" in first.tags and "transformers" in first.tags
    assert first.safetensors.total > 0 and models[-1].safetensors.total == 70_000_000_000
    assert first.downloads is None  # expand returns the fields asked for, not the defaults
    top = [m.id for m in HfApi().list_models(filter="transformers", pipeline_tag="text-generation", sort="downloads", limit=4)]
    assert top == TEXT_GENERATION_BY_DOWNLOADS[:4]
    trending = [m.id for m in HfApi().list_models(filter="transformers", sort="trending_score", limit=3)]
    assert trending == [f"{ORG}/tiny-bert", f"{ORG}/tiny-llama-e", f"{ORG}/tiny-llama-d"]


def test_listing_pages_are_linked(hub):
    url, pages, ids = f"{hub}/api/models?filter=transformers&pipeline_tag=text-generation&sort=downloads", 0, []
    while url:
        status, headers, body = http(url)
        assert status == 200
        ids += [m["id"] for m in json.loads(body)]
        pages += 1
        link = headers.get("Link")
        url = re.fullmatch(r'<(.+)>; rel="next"', link).group(1) if link else None
    assert ids == TEXT_GENERATION_BY_DOWNLOADS and pages == 3


def test_listing_filters(hub):
    api = HfApi()
    assert [m.id for m in api.list_models(search="LLAMA-B")] == [f"{ORG}/tiny-llama-b"]
    assert {m.id for m in api.list_models(author=ORG)} >= set(TEXT_GENERATION_BY_DOWNLOADS)
    assert list(api.list_models(author="someone-else")) == []
    assert [m.id for m in api.list_models(filter="gguf")] == [f"{ORG}/gguf-only"]
    assert f"{ORG}/tiny-table" in [d.id for d in api.list_datasets(author=ORG)]


def expected_parameters(folder):
    "Parameter counts by safetensors dtype, from the model itself (not from file headers)."
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(folder, dtype="auto")
    counts = {}
    for p in model.parameters():
        counts[DTYPES[p.dtype]] = counts.get(DTYPES[p.dtype], 0) + p.numel()
    return counts


def test_model_info(hub, hub_catalog):
    info = HfApi().model_info(LLAMA)
    folder = hub_catalog / "models" / LLAMA
    assert info.safetensors.parameters == expected_parameters(folder) == {"BF16": info.safetensors.total}
    assert re.fullmatch(r"[0-9a-f]{40}", info.sha)
    assert sorted(s.rfilename for s in info.siblings) == sorted(p.name for p in folder.iterdir())
    assert all(s.size is None for s in info.siblings)   # names only, as the Hub answers, unless asked for metadata:
    sizes = {s.rfilename: s.size for s in HfApi().model_info(LLAMA, files_metadata=True).siblings}
    assert sizes == {p.name: p.stat().st_size for p in folder.iterdir()}
    assert all(s.size is None for m in HfApi().list_models(expand=["siblings"]) for s in m.siblings)
    assert (info.pipeline_tag, info.library_name, info.gated, info.downloads, info.trending_score) == \
        ("text-generation", "transformers", False, 500, 1)
    assert info.config["model_type"] == "llama"
    assert HfApi().model_info(LLAMA, expand=["safetensors"]).safetensors.parameters == info.safetensors.parameters
    assert HfApi().model_info(f"{ORG}/too-large").safetensors.parameters == {"BF16": 70_000_000_000}
    assert HfApi().model_info(f"{ORG}/gated-llama").gated == "manual"  # metadata is public, files are not
    assert HfApi().model_info(f"{ORG}/gguf-only").config is None


def test_snapshot_download(hub, hub_catalog):
    path = Path(snapshot_download(LLAMA))
    folder = hub_catalog / "models" / LLAMA
    assert sorted(p.name for p in path.iterdir()) == sorted(p.name for p in folder.iterdir())
    for p in folder.iterdir():
        assert (path / p.name).read_bytes() == p.read_bytes(), p.name
    assert path.name == HfApi().model_info(LLAMA).sha  # the snapshot is named by the commit


def test_from_pretrained(hub, hub_catalog):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    model = AutoModelForCausalLM.from_pretrained(f"{ORG}/tiny-llama-b", trust_remote_code=False)
    local = AutoModelForCausalLM.from_pretrained(hub_catalog / "models" / LLAMA, trust_remote_code=False)
    assert model.config._name_or_path == f"{ORG}/tiny-llama-b"
    theirs = local.state_dict()
    assert all(torch.equal(t, theirs[k]) for k, t in model.state_dict().items())
    tok = AutoTokenizer.from_pretrained(f"{ORG}/tiny-llama-b", trust_remote_code=False)
    assert tok.convert_ids_to_tokens(tok("hello world")["input_ids"]) == ["[CLS]", "hello", "world", "[SEP]"]
    assert Path(os.environ["HF_HUB_CACHE"], f"models--{ORG}--tiny-llama-b").is_dir()


def test_errors_are_the_hubs(hub):
    def raised(call):
        with pytest.raises(Exception) as e:
            call()
        return type(e.value)
    assert raised(lambda: HfApi().model_info(f"{ORG}/no-such-model")) is RepositoryNotFoundError
    assert raised(lambda: hf_hub_download(f"{ORG}/no-such-model", "config.json")) is RepositoryNotFoundError
    assert raised(lambda: hf_hub_download(LLAMA, "config.json", repo_type="dataset")) is RepositoryNotFoundError
    assert raised(lambda: hf_hub_download(LLAMA, "config.json", revision="no-such-branch")) is RevisionNotFoundError
    assert raised(lambda: HfApi().model_info(LLAMA, revision="0" * 40)) is RevisionNotFoundError
    assert raised(lambda: hf_hub_download(LLAMA, "no-such-file.json")) is RemoteEntryNotFoundError
    assert issubclass(RemoteEntryNotFoundError, EntryNotFoundError)
    gated = f"{ORG}/gated-llama"
    assert raised(lambda: hf_hub_download(gated, "config.json", token=False)) is GatedRepoError
    assert raised(lambda: hf_hub_download(gated, "config.json", token="hf_someone_else")) is GatedRepoError
    assert json.loads(Path(hf_hub_download(gated, "config.json", token=GATED_TOKEN)).read_text())["model_type"] == "llama"


def test_resolve_headers_and_ranges(hub, hub_catalog):
    blob = (hub_catalog / "models" / LLAMA / "model.safetensors").read_bytes()
    url = f"{hub}/{LLAMA}/resolve/main/model.safetensors"
    status, headers, body = http(url, "HEAD")
    assert status == 200 and body == b""
    assert headers["X-Repo-Commit"] == HfApi().model_info(LLAMA).sha
    assert headers["ETag"] == f'"{hashlib.sha256(blob).hexdigest()}"' and int(headers["Content-Length"]) == len(blob)
    assert "X-Xet-Hash" not in headers
    status, headers, body = http(url, Range="bytes=8-23")
    assert (status, body, headers["Content-Range"]) == (206, blob[8:24], f"bytes 8-23/{len(blob)}")
    assert http(url, Range="bytes=-16")[2] == blob[-16:]
    assert http(url, Range=f"bytes={len(blob)}-")[0] == 416
    meta = get_safetensors_metadata(LLAMA)  # reads the header with range requests
    assert meta.parameter_count == {"BF16": HfApi().model_info(LLAMA).safetensors.total}


@pytest.mark.timeout(90)  # a server that is not threaded hangs here instead of answering
def test_parallel_downloads(hub, hub_catalog, tmp_path):
    port = int(hub.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as stalled:
        stalled.sendall(b"GET /api/models HTTP/1.1\r\nHost: stalled\r\n")  # a request whose headers never end
        # a single-threaded server would wait on the stalled client, and the client's HEAD would time out
        path = snapshot_download(f"{ORG}/tiny-llama-c", cache_dir=tmp_path / "cache", max_workers=8)
    folder = hub_catalog / "models" / ORG / "tiny-llama-c"
    assert all((Path(path) / p.name).read_bytes() == p.read_bytes() for p in folder.iterdir())
    blob = (folder / "model.safetensors").read_bytes()
    url = f"{hub}/{ORG}/tiny-llama-c/resolve/main/model.safetensors"
    chunk = len(blob) // 16 + 1
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        parts = list(pool.map(lambda i: http(url, Range=f"bytes={i * chunk}-{(i + 1) * chunk - 1}")[2], range(16)))
    assert b"".join(parts) == blob


def test_upload_makes_revisions(hub, hub_catalog, tmp_path):
    api, repo = HfApi(token=WRITE_TOKEN), f"{ORG}/results-{time.time_ns()}"
    api.create_repo(repo, repo_type="dataset")
    with pytest.raises(HfHubHTTPError) as e:
        api.create_repo(repo, repo_type="dataset")
    assert e.value.response.status_code == 409
    api.create_repo(repo, repo_type="dataset", exist_ok=True)
    folder = tmp_path / "upload"
    (folder / "data").mkdir(parents=True)
    first = pd.DataFrame({"model_id": ["a/b", "c/d"], "wall_s": [1.5, 2.5]})
    first.to_parquet(folder / "data" / "train.parquet")
    c1 = api.upload_folder(folder_path=folder, repo_id=repo, repo_type="dataset", commit_message="first table")
    pd.testing.assert_frame_equal(pd.read_parquet(f"hf://datasets/{repo}/data"), first)
    second = pd.DataFrame({"model_id": ["e/f"], "wall_s": [9.0]})
    second.to_parquet(folder / "data" / "train.parquet")
    c2 = api.upload_folder(folder_path=folder, repo_id=repo, repo_type="dataset", commit_message="second table")
    assert re.fullmatch(r"[0-9a-f]{40}", c1.oid) and re.fullmatch(r"[0-9a-f]{40}", c2.oid) and c1.oid != c2.oid
    assert api.dataset_info(repo).sha == c2.oid
    pd.testing.assert_frame_equal(pd.read_parquet(f"hf://datasets/{repo}/data", storage_options={"skip_instance_cache": True}), second)
    pd.testing.assert_frame_equal(pd.read_parquet(f"hf://datasets/{repo}@{c1.oid}/data"), first)
    old = hf_hub_download(repo, "data/train.parquet", repo_type="dataset", revision=c1.oid)
    pd.testing.assert_frame_equal(pd.read_parquet(old), first)
    assert [c.title for c in api.list_repo_commits(repo, repo_type="dataset")] == ["second table", "first table", "initial commit"]
    api.delete_file("data/train.parquet", repo, repo_type="dataset")
    assert api.list_repo_files(repo, repo_type="dataset") == [] and len(api.list_repo_commits(repo, repo_type="dataset")) == 4
    with hub_server(hub_catalog) as restarted:  # a second server process reads the state from the catalog's .hub/
        again = HfApi(endpoint=restarted)
        assert again.list_repo_files(repo, repo_type="dataset", revision=c2.oid) == ["data/train.parquet"]
        assert again.dataset_info(repo, revision=c1.oid).sha == c1.oid


def test_writes_need_a_token(hub):
    with pytest.raises(HfHubHTTPError) as e:
        HfApi(token=False).create_repo(f"{ORG}/anonymous", repo_type="dataset")
    assert e.value.response.status_code == 401


def test_child_process_with_hub_env(hub, tmp_path):
    code = ("from huggingface_hub import HfApi; print([m.id for m in HfApi().list_models("
            "pipeline_tag='fill-mask')])")
    env = {**os.environ, **hub_env(hub, tmp_path / "hf")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == str([f"{ORG}/tiny-bert"]), out.stderr


def test_missing_catalog_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="catalog folder not found"):
        serve_catalog(tmp_path / "missing")
    with pytest.raises(UsageError, match="catalog folder not found"):
        with hub_server(tmp_path / "missing"):
            pass
    with pytest.raises(UsageError, match="loopback"):
        serve_catalog(tmp_path, host="0.0.0.0")


# The demo catalog (neuron_support.demo): real SmolLM2 weights served by the local Hub.
SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct"
COMMON_WORDS = {"the", "of", "and", "to", "a", "an", "is", "in", "will", "be", "that", "with", "for", "as", "are",
                "we", "it", "our", "can", "more", "ai", "future"}


def looks_english(text: str) -> bool:
    "Mostly ASCII letters and spaces, and several of the commonest English words."
    ok = sum(c.isascii() and (c.isalpha() or c.isspace() or c in ".,;:'\"!?-()") for c in text)
    words = re.findall(r"[a-z]+", text.lower())
    return len(words) >= 8 and ok >= 0.9 * len(text) and len(set(words) & COMMON_WORDS) >= 3


def test_looks_english_rejects_garbage():
    assert looks_english("The future of AI is bright, and it will change the way we work and live.")
    assert not looks_english("xqz vvk plo ttr uuq zzn mmw kkp qqa wwe rrt")
    assert not looks_english("ème ème ème ème ème ème ème ème ème ème")
    assert not looks_english("L'avenir de l'IA est prometteur pour les entreprises et les gens du monde entier.")


GENERATE = r'''
import json, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
mid = "HuggingFaceTB/SmolLM2-135M-Instruct"
tok = AutoTokenizer.from_pretrained(mid, trust_remote_code=False)
model = AutoModelForCausalLM.from_pretrained(mid, trust_remote_code=False, dtype=torch.float32)
inputs = tok.apply_chat_template([{"role": "user", "content": "The future of AI is"}], add_generation_prompt=True,
                                 return_tensors="pt", return_dict=True)
out = model.generate(**inputs, max_new_tokens=40, do_sample=False)
print(json.dumps(tok.decode(out[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)))
'''


def test_demo_smollm2_generates_english(demo_hub, tmp_path):
    env = {**os.environ, **hub_env(demo_hub, tmp_path / "hf")}
    out = subprocess.run([sys.executable, "-c", GENERATE], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    text = json.loads(out.stdout.strip().splitlines()[-1])
    assert looks_english(text), text
    assert (tmp_path / "hf" / "hub" / "models--HuggingFaceTB--SmolLM2-135M-Instruct").is_dir()  # it came from the server


def test_demo_listing_and_info(demo_hub, demo_catalog):
    api = HfApi(endpoint=demo_hub)
    models = list(api.list_models(filter="transformers", pipeline_tag="text-generation", sort="downloads",
                                  expand=["safetensors", "config", "tags", "downloads"]))
    cards = json.loads((demo_catalog / "catalog.json").read_text())["models"]
    expected = [c["id"] for c in sorted(cards, key=lambda c: -c.get("downloads", 0))
                if c.get("pipeline_tag") == "text-generation" and c.get("library_name", "transformers") == "transformers"]
    assert [m.downloads for m in models] == sorted((m.downloads for m in models), reverse=True)
    assert {m.id for m in models} == set(expected) and SMOLLM2 in expected
    info = api.model_info(SMOLLM2)
    assert info.safetensors.parameters == expected_parameters(demo_catalog / "models" / SMOLLM2)


def commit_ndjson(hub, repo, ops, token=WRITE_TOKEN):
    "POST a commit's NDJSON as huggingface_hub sends it; the status and the Hub's error header."
    body = "\n".join(json.dumps(o) for o in [{"key": "header", "value": {"summary": "t"}}, *ops]).encode()
    req = urllib.request.Request(f"{hub}/api/datasets/{repo}/commit/main", data=body, method="POST",
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"})
    try:
        with urllib.request.urlopen(req) as r: return r.status, r.read().decode()
    except urllib.error.HTTPError as e: return e.code, e.read().decode()


def test_a_commit_never_reaches_a_file_outside_the_repo(hub, hub_catalog):
    "A hostile client's lfsFile oid or path names no file of the machine, nor a gated repo's file past its gate (issue 15)."
    api, repo = HfApi(token=WRITE_TOKEN), f"{ORG}/hostile-{time.time_ns()}"
    api.create_repo(repo, repo_type="dataset")
    api.upload_file(path_or_fileobj=b"ordinary", path_in_repo="a.txt", repo_id=repo, repo_type="dataset")  # the blob store exists
    for oid in ["../" * 12 + "etc/passwd", f"../models/{ORG}/gated-llama/config.json", "0" * 64]:
        status, text = commit_ndjson(hub, repo, [{"key": "lfsFile", "value": {"path": "pw", "oid": oid}}])
        assert status in (400, 422) and "LFS" in text, (oid, status, text)
    for path in ["../../pw", "a/../../pw", "/../pw"]:
        status, text = commit_ndjson(hub, repo, [{"key": "file", "value": {"path": path, "content": "x"}}])
        assert status == 400 and "invalid path" in text, (path, status, text)
    assert "pw" not in api.list_repo_files(repo, repo_type="dataset")
    for path in ["pw", "../../../../etc/passwd", "..%2F..%2Fetc%2Fpasswd"]:
        try:
            with urllib.request.urlopen(f"{hub}/datasets/{repo}/resolve/main/{path}") as r: body = r.read()
        except urllib.error.HTTPError as e: body = e.read()
        assert b"root:" not in body, path


# Issue 26: one client's upload, or one bad line of the Hub's own files, is that repo's problem, never the listing's.
def one_header(header) -> bytes:
    "A .safetensors file of this header (any JSON value) and 4 bytes of data."
    h = json.dumps(header).encode()
    return len(h).to_bytes(8, "little") + h + bytes(4)


GOOD_WEIGHTS = one_header({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}})
BAD_UPLOADS = {  # model name -> (the model.safetensors uploaded over a good one, what the exclusion says)
    "no-dtype": (one_header({"w": {"shape": [2], "data_offsets": [0, 4]}}), "gives tensor 'w' as"),
    "a-list": (one_header([{"dtype": "BF16", "shape": [2]}]), "is a JSON list, not an object"),
    "string-shape": (one_header({"w": {"dtype": "BF16", "shape": "2", "data_offsets": [0, 4]}}), "a shape of non-negative integers"),
    "lying-length": ((2**62).to_bytes(8, "little") + b"{}", "header a length of 4611686018427387904 bytes, more than the file holds"),
}
LLAMA_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16, "intermediate_size": 32,
                "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 128}
CLI = Path(sys.executable).parent / "neuron-support"


def write_catalog(root: Path, models: dict, datasets=(), **extra) -> Path:
    "A catalog folder: {name: {file: bytes}} under models/{ORG}/, each a transformers text-generation model by its downloads' order."
    cards = []
    for i, (name, files) in enumerate(models.items()):
        for f, data in files.items():
            (root / "models" / ORG / name / f).parent.mkdir(parents=True, exist_ok=True)
            (root / "models" / ORG / name / f).write_bytes(data)
        cards.append({"id": f"{ORG}/{name}", "pipeline_tag": "text-generation", "library_name": "transformers", "downloads": 1000 - i,
                      "trendingScore": 100 - i})
    (root / "catalog.json").write_text(json.dumps({"models": cards, "datasets": list(datasets), **extra}))
    return root


class LoggedHub:
    "A local Hub in a child process whose stderr (warnings, tracebacks) goes to a file."
    def __init__(self, catalog: Path, log: Path):
        self.catalog, self.log = catalog, log

    def __enter__(self):
        self.file = open(self.log, "a")
        self.server = hub_server(self.catalog, stderr=self.file)
        return self.server.__enter__()

    def __exit__(self, *exc):
        self.server.__exit__(*exc); self.file.close()

    def text(self) -> str: return self.log.read_text()


def test_repo_id_rule_is_huggingface_hubs():
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id
    from neuron_support.hub import valid_repo_id

    def hf_says(i):
        try: validate_repo_id(i); return "/" in i
        except HFValidationError: return False
    ids = ["acme/tiny", "a/b", "_a/b_", "a.b/c-d", "Org/Name.v2", "acme/../../etc", "neuron-support-demo/..%2F..%2Fx", "acme/a--b",
           "acme/a..b", "acme/.x", "acme/x.", "acme/-x", "acme/x-", "acme/x.git", "acme/é", "acme", "a/b/c", "/b", "a/", "a/" + "x" * 96,
           "a/" + "x" * 97, "acme/a b"]
    assert [valid_repo_id(i) for i in ids] == [hf_says(i) for i in ids]


def test_a_bad_safetensors_upload_is_that_models_problem(tmp_path):
    "Each bad header uploaded leaves list_models and `neuron-support select` working; the model is excluded with the reason."
    models = {name: {"config.json": json.dumps(LLAMA_CONFIG).encode(), "model.safetensors": GOOD_WEIGHTS} for name in ["good", *BAD_UPLOADS]}
    hub = LoggedHub(write_catalog(tmp_path / "catalog", models), tmp_path / "hub.log")
    with hub as endpoint:
        api = HfApi(endpoint=endpoint, token=WRITE_TOKEN)
        for name, (weights, _) in BAD_UPLOADS.items():
            api.upload_file(path_or_fileobj=weights, path_in_repo="model.safetensors", repo_id=f"{ORG}/{name}", commit_message="bad header")
        listed = {m.id: m for m in api.list_models(filter="transformers", expand=["safetensors", "sha"])}
        assert set(listed) == {f"{ORG}/{n}" for n in models}
        assert listed[f"{ORG}/good"].safetensors.parameters == {"BF16": 2}
        assert all(listed[f"{ORG}/{n}"].safetensors is None for n in BAD_UPLOADS)   # the Hub says nothing of what it cannot read
        assert api.model_info(f"{ORG}/no-dtype").safetensors is None
        env = {**{k: v for k, v in os.environ.items() if k != "HF_TOKEN"}, **hub_env(endpoint, tmp_path / "hf")}
        p = subprocess.run([str(CLI), "select", "--json", "--device", "cpu", "--data", str(tmp_path / "out")], capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    items = {c["model_id"]: c for c in json.loads(p.stdout)["items"]}
    assert items[f"{ORG}/good"]["decision"] == "run"
    for name, (_, why) in BAD_UPLOADS.items():
        c = items[f"{ORG}/{name}"]
        assert (c["decision"], c["exclusion"]) == ("excluded", "no-weights"), c
        assert c["reason"].startswith("no loadable weights: ") and why in c["reason"] and "model.safetensors" in c["reason"], c["reason"]
    assert "Traceback" not in hub.text(), hub.text()


def test_a_torn_commit_line_leaves_the_last_whole_state(tmp_path):
    "A crash in the middle of append_commit leaves a torn last line: the catalog is still served, the torn line skipped with a warning."
    catalog = write_catalog(tmp_path / "catalog", {"good": {"config.json": json.dumps(LLAMA_CONFIG).encode(), "model.safetensors": GOOD_WEIGHTS}})
    hub, repo = LoggedHub(catalog, tmp_path / "hub.log"), f"{ORG}/results"
    with hub as endpoint:
        api = HfApi(endpoint=endpoint, token=WRITE_TOKEN)
        api.create_repo(repo, repo_type="dataset")
        first = api.upload_file(path_or_fileobj=b"a,b\n1,2\n", path_in_repo="t.csv", repo_id=repo, repo_type="dataset").oid
    log = catalog / ".hub" / "repos" / "datasets" / repo / "commits.jsonl"
    whole = log.read_text()
    log.write_text(whole + whole.splitlines()[-1][:57])   # what a crash in the middle of the next append leaves
    with hub as endpoint:
        api = HfApi(endpoint=endpoint, token=WRITE_TOKEN)
        assert [m.id for m in api.list_models()] == [f"{ORG}/good"]
        assert api.dataset_info(repo).sha == first and api.list_repo_files(repo, repo_type="dataset") == ["t.csv"]
        second = api.upload_file(path_or_fileobj=b"a,b\n3,4\n", path_in_repo="t.csv", repo_id=repo, repo_type="dataset").oid
    with hub as endpoint:   # the commit after the crash is a whole line of its own
        api = HfApi(endpoint=endpoint)
        assert api.dataset_info(repo).sha == second
        assert Path(hf_hub_download(repo, "t.csv", repo_type="dataset", endpoint=endpoint, cache_dir=tmp_path / "c")).read_bytes() == b"a,b\n3,4\n"
        assert [c.commit_id for c in api.list_repo_commits(repo, repo_type="dataset")][:2] == [second, first]
    text = hub.text()
    assert "Traceback" not in text and f".hub/repos/datasets/{repo}/commits.jsonl: line 3 is not a whole commit" in text, text


def test_nothing_outside_the_catalog_is_served(tmp_path):
    "A catalog entry whose id holds `..`, and a link out of a model folder, serve nothing; the rest of the catalog is served."
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("root:not-for-the-hub")
    catalog = write_catalog(tmp_path / "catalog", {"good": {"config.json": json.dumps(LLAMA_CONFIG).encode(), "model.safetensors": GOOD_WEIGHTS}})
    (catalog / "models" / ORG / "good" / "secret.txt").symlink_to(secret)
    (catalog / "models" / ORG / "good" / "linked-dir").symlink_to(secret.parent, target_is_directory=True)
    cat = json.loads((catalog / "catalog.json").read_text())
    cat["models"] += [{"id": "neuron-support-demo/../../../outside", "pipeline_tag": "text-generation", "library_name": "transformers"},
                      {"id": f"{ORG}/../outside"}, {"id": f"{ORG}/x", "downloads": "many"}, "not an entry"]
    (catalog / "catalog.json").write_text(json.dumps(cat))
    hub = LoggedHub(catalog, tmp_path / "hub.log")
    with hub as endpoint:
        api = HfApi(endpoint=endpoint)
        assert [m.id for m in api.list_models()] == [f"{ORG}/good"]
        assert sorted(api.list_repo_files(f"{ORG}/good")) == ["config.json", "model.safetensors"]
        for path in ["neuron-support-demo/..%2F..%2F..%2Foutside/resolve/main/secret.txt", f"{ORG}/..%2Foutside/resolve/main/secret.txt",
                     f"{ORG}/good/resolve/main/secret.txt", f"{ORG}/good/resolve/main/linked-dir/secret.txt",
                     f"{ORG}/good/resolve/main/..%2F..%2F..%2Foutside%2Fsecret.txt", "api/models/neuron-support-demo/..%2F..%2F..%2Foutside"]:
            status, _, body = http(f"{endpoint}/{path}")
            assert status == 404 and b"not-for-the-hub" not in body, (path, status, body)
    text = hub.text()
    assert "Traceback" not in text, text
    assert "id 'neuron-support-demo/../../../outside' is not org/name" in text and f"models/{ORG}/good/secret.txt leads out of the catalog" in text, text


def raw_request(endpoint: str, request: bytes) -> tuple:
    "(status, headers) of a request written byte by byte, Content-Length and all."
    host, port = endpoint.rsplit("/", 1)[1].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(request)
        head = b""
        while b"\r\n\r\n" not in head and (chunk := s.recv(65536)): head += chunk
    lines = head.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    return int(lines[0].split()[1]), dict(l.split(": ", 1) for l in lines[1:])


def test_client_mistakes_are_4xx_and_the_server_stays_up(tmp_path):
    "Each client mistake answers 4xx with the Hub's X-Error-Message, no traceback in the log; invalid base64 commits nothing."
    catalog = write_catalog(tmp_path / "catalog", {"good": {"config.json": json.dumps(LLAMA_CONFIG).encode(), "model.safetensors": GOOD_WEIGHTS}})
    hub, repo = LoggedHub(catalog, tmp_path / "hub.log"), f"{ORG}/mistakes"
    with hub as endpoint:
        api = HfApi(endpoint=endpoint, token=WRITE_TOKEN)
        api.create_repo(repo, repo_type="dataset")
        before = api.dataset_info(repo).sha

        def post(path, body: bytes):
            req = urllib.request.Request(f"{endpoint}/{path}", data=body, method="POST",
                                         headers={"Authorization": f"Bearer {WRITE_TOKEN}", "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=30) as r: return r.status, r.headers
            except urllib.error.HTTPError as e: return e.code, e.headers
        header = json.dumps({"key": "header", "value": {"summary": "t"}}).encode()
        commit = f"api/datasets/{repo}/commit/main"
        answers = {
            "limit=abc": http(f"{endpoint}/api/models?limit=abc")[:2],
            "cursor=-1": http(f"{endpoint}/api/models?cursor=-1")[:2],
            "sort=gated": http(f"{endpoint}/api/models?sort=gated")[:2],
            "create: not JSON": post("api/repos/create", b'{"name": "x", "organiz'),
            "create: a list": post("api/repos/create", b'["x"]'),
            "create: a number as name": post("api/repos/create", b'{"name": 3}'),
            "preupload: a string": post(f"api/datasets/{repo}/preupload/main", b'"files"'),
            "commit: cut short": post(commit, header + b'\n{"key": "file", "value": {"path": "a.txt", "content": "eA=='),
            "commit: a list line": post(commit, header + b'\n["file", {"path": "a.txt"}]'),
            "commit: a string line": post(commit, header + b'\n"file"'),
            "commit: a file without content": post(commit, header + b'\n{"key": "file", "value": {"path": "a.txt"}}'),
            "commit: invalid base64": post(commit, header + b'\n{"key": "file", "value": {"path": "a.txt", "content": "!!!", "encoding": "base64"}}'),
            "paths-info: not JSON": post(f"api/datasets/{repo}/paths-info/main", b"{"),
            "validate-yaml: a list": post("api/validate-yaml", b"[]"),
            "Content-Length: abc": raw_request(endpoint, f"POST /api/repos/create HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n"
                                                         f"Authorization: Bearer {WRITE_TOKEN}\r\n\r\n{{}}".encode()),
            "chunk size zz": raw_request(endpoint, f"POST /api/repos/create HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                                                   f"Authorization: Bearer {WRITE_TOKEN}\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n".encode()),
            "a revision with a line break": http(f"{endpoint}/api/models/{ORG}/good/revision/v%0D%0ASet-Cookie:%20x%C3%A9")[:2],
        }
        for what, (status, headers) in answers.items():
            assert 400 <= status < 500 and headers.get("X-Error-Message"), (what, status, dict(headers))
        assert "Set-Cookie" not in answers["a revision with a line break"][1]
        assert api.dataset_info(repo).sha == before and api.list_repo_files(repo, repo_type="dataset") == []   # nothing was committed
        assert [m.id for m in api.list_models()] == [f"{ORG}/good"]   # and the server still serves
    assert "Traceback" not in hub.text(), hub.text()
