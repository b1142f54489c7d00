"""Issue 42 (Hardening III): a run tests the checkpoint it was given, and no checkpoint, config or client can exhaust the
host or hang the app. One test (or two) a defect, each shown to fail on the code before its fix:

1. a folder argument is that folder, by its absolute path, wherever the run's notebook runs (`run org/name`, `run .`);
2. JSON nested a million levels deep is refused in one line by the plan, served by the local Hub without a 500, and a Hub
   that answers 5xx ends `select` in one line;
3. the untested-model page's fetch has a total deadline, follows no redirect to another host, and keeps a cache bounded in bytes;
4. a run's memory limit: a processor asking for a 100000 x 100000 resize is its own FAIL(other) naming the limit, in seconds,
   and a checkpoint's tokenizer.json past the bound on what a run reads is refused in its row;
5. the CLI's limits are finite, positive numbers within a stated maximum;
6. the local Hub checks the token before it reads a body, bounds bodies, refuses a chunked body cut short, and answers
   client mistakes 4xx without a traceback on its terminal;
7. the model page cuts long fields, and gives the whole where a person asks;
8. a local folder's row and run.py name it `local:<folder>-<hash>`, never by a path of this machine, and publish leaves it out;
9. a sweep's Ray dies with the sweep, its agents too, within seconds of a kill -9.
"""
import contextlib, http.server, json, os, re, shutil, signal, socket, subprocess, sys, threading, time
from pathlib import Path

import pytest

from conftest import ORG, free_port
from test_hardening import only_row, tiny_llama
from neuron_support.hub import hub_server

CLI = shutil.which("neuron-support")
LOCAL_NAME = re.compile(r"local:tiny-bert-[0-9a-f]{8}")


def cli(*args, cwd=None, env=None, timeout=600):
    "`neuron-support ARGS` in `cwd`, its output captured."
    return subprocess.run([CLI, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def one_line_error(p, *words):
    "A user's mistake: exit 2, one line on stderr naming `words`, no traceback."
    assert p.returncode == 2, (p.returncode, p.stdout[-2000:], p.stderr[-3000:])
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr[-3000:]
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def refused_llama(folder: Path) -> Path:
    "A tiny Llama whose tokenizer.json is 300 MiB (sparse: no disk used): the plan reads it, the run refuses it at once (FAIL(other))."
    tiny_llama(folder)
    with open(folder / "tokenizer.json", "r+b") as f: f.truncate(300 * 2**20)
    return folder


# 1 and 8: a relative folder named like a Hub model ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def local_runs(hub, tmp_path_factory):
    """`run neuron-support-test/tiny-bert` where that is a folder under the current one (a Llama; the Hub's model of that id
    is a BERT), then `run .` inside the same folder: (the folders, the two processes)."""
    root = tmp_path_factory.mktemp("local-runs")
    work, out = root / "work", root / "out"
    ckpt = refused_llama(work / ORG / "tiny-bert")
    first = cli("run", f"{ORG}/tiny-bert", "--out", out, cwd=work)
    rows = [only_row(out)] if first.returncode == 0 else []
    second = cli("run", ".", "--out", out, cwd=ckpt)
    return dict(root=root, work=work, out=out, ckpt=ckpt, first=first, second=second, first_row=rows[0] if rows else None)


def test_a_folder_argument_runs_that_folder(local_runs, tmp_path):
    """The relative folder is the checkpoint run (the Llama, not the Hub's BERT of the same id); `run .` runs the current
    folder, under the same name; `run .` where there is no checkpoint is one line, and no run folder."""
    first, second = local_runs["first"], local_runs["second"]
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    row = local_runs["first_row"]
    assert row["model_type"] == "llama" and row["result"] == "FAIL(other)" and "tokenizer.json" in row["notes"], row   # the local Llama
    assert LOCAL_NAME.fullmatch(row["model_id"]), row["model_id"]
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    again = only_row(local_runs["out"])   # one row: the same folder has the same name
    assert again["model_id"] == row["model_id"] and again["model_type"] == "llama", again
    (tmp_path / "empty").mkdir()
    one_line_error(cli("run", ".", "--out", tmp_path / "out", cwd=tmp_path / "empty"), "config.json")
    assert not (tmp_path / "out" / "runs").exists()


def test_a_local_folder_is_named_without_its_path_and_not_published(local_runs, tmp_path, hub):
    """The row and run.py name the folder `local:<name>-<hash>`; nothing of this machine's paths is in the row; run.py says
    how to give it the folder again; publish leaves the row and its run folder out (a Hub model's row beside it goes), and says so."""
    from neuron_support.publish import add_rows, dataset_files, read_table, synthetic_row
    row, root = local_runs["first_row"], str(local_runs["root"])
    assert row is not None, local_runs["first"].stderr[-3000:]
    assert root not in json.dumps(row, default=str), [k for k, v in row.items() if root in str(v)]
    assert "--checkpoint FOLDER" in row["run_py"] and f"run of {row['model_id']!r}" in row["run_py"]
    out = shutil.copytree(local_runs["out"], tmp_path / "out", symlinks=True)   # its run folder links to the checkpoint
    pair = next(out.glob("data/*/*.parquet")).relative_to(out / "data").as_posix().removesuffix(".parquet")
    add_rows(out, pair, [synthetic_row(f"{ORG}/tiny-bert", pair=pair)])
    p = cli("publish", "--data", out, "--repo", f"{ORG}/local-rows", "--dry-run")
    assert p.returncode == 0, p.stderr[-3000:]
    listed = [l for l in p.stdout.splitlines() if l.startswith(("add", "update"))]
    assert listed and not [l for l in listed if "local:" in l or root in l], listed
    assert "1 row of a local checkpoint left out" in p.stdout, p.stdout
    files = dataset_files(out, f"{ORG}/local-rows")
    (tmp_path / "published.parquet").write_bytes(files[f"data/{pair}.parquet"])
    assert list(read_table(tmp_path / "published.parquet").model_id) == [f"{ORG}/tiny-bert"]
    assert not [f for f in files if "local:" in f]


# 2: deep JSON, and a Hub that answers 5xx -----------------------------------------------------------------------------

DEPTH = 1_000_000
DEEP_CONFIG = '{"model_type": "llama", "x": ' + "[" * DEPTH + "]" * DEPTH + "}"


def test_a_deep_config_is_one_line(tmp_path, hub):
    "A config.json nested a million levels deep: `run` says so in one line, no RecursionError."
    ckpt = tmp_path / "deep"; ckpt.mkdir()
    (ckpt / "config.json").write_text(DEEP_CONFIG)
    one_line_error(cli("run", ckpt, "--out", tmp_path / "out"), "config.json", "deeper than")


def test_the_local_hub_lists_a_catalog_with_a_deep_config(tmp_path):
    "The local Hub serving a repo whose config.json is a million levels deep: its listing and the repo's info answer 200."
    import urllib.request
    for name, text in (("deep", DEEP_CONFIG), ("fine", '{"model_type": "bert"}')):
        (tmp_path / "models" / "evil" / name).mkdir(parents=True)
        (tmp_path / "models" / "evil" / name / "config.json").write_text(text)
    (tmp_path / "catalog.json").write_text(json.dumps({"models": [{"id": "evil/deep"}, {"id": "evil/fine"}]}))
    with open(tmp_path / "hub.log", "w") as log, hub_server(tmp_path, stderr=log) as endpoint:
        with urllib.request.urlopen(f"{endpoint}/api/models?full=true", timeout=60) as r:
            listed = {m["id"]: m for m in json.loads(r.read())}
        with urllib.request.urlopen(f"{endpoint}/api/models/evil/deep", timeout=60) as r: deep = json.loads(r.read())
    assert set(listed) == {"evil/deep", "evil/fine"} and listed["evil/fine"]["config"] == {"model_type": "bert"}
    assert "config" not in deep and deep["id"] == "evil/deep"
    assert "Traceback" not in (tmp_path / "hub.log").read_text()


class Failing(http.server.BaseHTTPRequestHandler):
    "A Hub that answers 503 to everything, and asks to be retried at once (so that the client's five retries take seconds)."
    def do_GET(self):
        self.send_response(503); self.send_header("Retry-After", "0"); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
    do_HEAD = do_GET
    def log_message(self, *args): pass


@contextlib.contextmanager
def serving(handler):
    "A threaded HTTP server on 127.0.0.1 with `handler`; yields its address."
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try: yield f"http://127.0.0.1:{server.server_port}"
    finally: server.shutdown(); server.server_close()


def test_a_hub_that_answers_5xx_ends_select_in_one_line(tmp_path):
    with serving(Failing) as endpoint:
        p = cli("select", "--data", tmp_path, env={"HF_ENDPOINT": endpoint}, timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-3000:]
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("neuron-support: error: ") and "503" in last and endpoint in last, last


# 3: the untested-model page's fetch -----------------------------------------------------------------------------------

class Dribbling(http.server.BaseHTTPRequestHandler):
    "A Hub that sends its config.json one byte every 0.5 s: no read waits long, the whole takes minutes."
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "1000"); self.end_headers()
        with contextlib.suppress(OSError):
            for _ in range(1000): self.wfile.write(b" "); self.wfile.flush(); time.sleep(0.5)
    def log_message(self, *args): pass


LARGE = json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "pad": [{"k": i} for i in range(60_000)]}).encode()


class Large(http.server.BaseHTTPRequestHandler):
    "A Hub whose every model has a config.json of about 900 KB."
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", str(len(LARGE))); self.end_headers(); self.wfile.write(LARGE)
    def log_message(self, *args): pass


FETCHES = """import json, os, sys, time, tracemalloc
import neuron_support.app as app
def at(endpoint, model):
    os.environ["HF_ENDPOINT"] = endpoint
    return app.hub_config(model)
slow, redirecting, large = sys.argv[1:]
start = time.monotonic(); why = at(slow, "slow/model")[1]; took = time.monotonic() - start
moved = at(redirecting, "moved/model")
tracemalloc.start(); found = [app.declared(at(large, f"big/m{i}")[0]) for i in range(8)]
print(json.dumps({"took": took, "why": why, "moved": moved, "held": tracemalloc.get_traced_memory()[0], "found": found[-1]}))
"""


def test_the_config_fetch_has_a_deadline_stays_on_its_host_and_keeps_little():
    """The untested-model page's fetch: a Hub that dribbles its config a byte every 0.5 s is given up within the deadline; a
    redirect to another host (here another port) is not followed; eight configs of 900 KB leave little kept (the parsed
    configs were, about 7 MB each)."""
    hits = []
    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            body = b'{"model_type": "llama"}'
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
        def log_message(self, *args): pass
    with serving(Dribbling) as slow, serving(Large) as large, serving(Elsewhere) as other:
        class Redirecting(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(302); self.send_header("Location", f"{other}/config.json"); self.send_header("Content-Length", "0"); self.end_headers()
            def log_message(self, *args): pass
        with serving(Redirecting) as redirecting:
            try: p = subprocess.run([sys.executable, "-c", FETCHES, slow, redirecting, large], capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired: pytest.fail("the fetches were still going after 120 s")
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["took"] < 8 and "did not answer" in got["why"], got
    assert hits == [] and got["moved"][0] is None and "another host" in got["moved"][1], (hits, got["moved"])
    assert got["found"] == ["llama", "LlamaForCausalLM"] and got["held"] < 20 * 2**20, f"{got['held'] / 2**20:.0f} MiB held after 8 configs"


# 4: a run's memory limit, and the bound on the files it reads --------------------------------------------------------

def huge_resize_vit(folder: Path) -> Path:
    "A tiny ViT whose image processor resizes the photograph to 100000 x 100000 pixels (30 GB as bytes)."
    import torch
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor
    torch.manual_seed(0)
    ViTForImageClassification(ViTConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                                        image_size=32, patch_size=8, num_labels=3)).save_pretrained(folder)
    ViTImageProcessor(size={"height": 100_000, "width": 100_000}).save_pretrained(folder)
    return folder


def test_a_huge_resize_is_its_own_row_naming_the_memory_limit(tmp_path, hub):
    "A FAIL(other) that names the run's memory limit, in seconds; a process of the host beside it is untouched."
    vit = huge_resize_vit(tmp_path / "huge-vit")
    beside = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        start = time.monotonic()
        p = cli("run", vit, "--core-gb", "0.5", "--out", tmp_path / "out", timeout=300)
        took = time.monotonic() - start
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        row = only_row(tmp_path / "out")
        assert row["result"] == "FAIL(other)" and re.search(r"exceeded its memory limit of [\d.]+ GiB", row["notes"]), row["notes"]
        assert took < 120, took
        assert beside.poll() is None   # the host's other processes: untouched
    finally:
        beside.kill(); beside.wait()


def test_a_tokenizer_past_the_file_bound_is_refused_in_its_row(tmp_path, hub):
    "A tokenizer.json of 300 MiB (sparse: no disk is used) is not read: its row says which file and the bound."
    ckpt = tiny_llama(tmp_path / "big-tokenizer")
    with open(ckpt / "tokenizer.json", "r+b") as f: f.truncate(300 * 2**20)
    p = cli("run", ckpt, "--out", tmp_path / "out")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    row = only_row(tmp_path / "out")
    assert row["result"] == "FAIL(other)" and "tokenizer.json" in row["notes"] and "MiB" in row["notes"], row["notes"]


# 5: the CLI's numbers -------------------------------------------------------------------------------------------------

BAD_NUMBERS = [(["run", "nobody/nothing-here", "--time-limit", v], "--time-limit") for v in ("nan", "inf", "-inf", "1e300")] + \
              [(["run", "nobody/nothing-here", "--core-gb", v], "--core-gb") for v in ("nan", "inf", "1e9")] + \
              [(["run", "nobody/nothing-here", "--cores", v], "--cores") for v in ("0", "1e3", "x")] + \
              [(["sweep", "--slots", v], "--slots") for v in ("-1", "0", "1e9", "2.5")] + \
              [(["sweep", "--max-runs", v], "--max-runs") for v in ("-5", "nan", "1e12")] + \
              [(["sweep", "--time-limit", v], "--time-limit") for v in ("nan", "inf")] + \
              [(["architectures", "--only", "no_such_type", "--device", "cpu", "--slots", "0"], "--slots"),   # what is not refused
               (["architectures", "--only", "no_such_type", "--device", "cpu", "--time-limit", "inf"], "--time-limit"),   # ends at --only
               (["select", "--limit", "-2"], "--limit")]


@pytest.mark.parametrize("args,flag", BAD_NUMBERS, ids=[" ".join(a[2:] if a[0] == "run" else a[:1] + a[-2:]) for a, _ in BAD_NUMBERS])
def test_a_limit_that_is_not_a_sane_number_is_one_line(args, flag, capsys, monkeypatch, tmp_path):
    "Each is refused before anything starts: exit 2, one line that names the flag."
    from neuron_support.cli import main
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")   # nothing answers there: what is not refused fails on the Hub
    try: rc = main(args)
    except SystemExit as e: rc = e.code
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.strip()]
    assert rc == 2 and len(lines) == 1 and flag in lines[0] and "Traceback" not in err, (rc, err)


# 6: the local Hub's bodies --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_hub(tmp_path_factory):
    "A local Hub over one repo, its terminal's output in a file: (endpoint, catalog folder, the file)."
    root = tmp_path_factory.mktemp("small-hub")
    (root / "models" / "org" / "one").mkdir(parents=True)
    (root / "models" / "org" / "one" / "config.json").write_text('{"model_type": "bert"}')
    (root / "catalog.json").write_text(json.dumps({"models": [{"id": "org/one"}]}))
    log = root / "hub.log"
    with open(log, "w") as f, hub_server(root, stderr=f) as endpoint:
        yield endpoint, root, log


def raw(endpoint: str, head: bytes, body: bytes = b"", close_write: bool = False, timeout: float = 10) -> bytes:
    "Send a raw request; the server's answer (as much as it sends before it closes, or `timeout`)."
    host, port = endpoint.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(head + body)
        if close_write: s.shutdown(socket.SHUT_WR)
        got = b""
        with contextlib.suppress(socket.timeout, ConnectionResetError):
            while chunk := s.recv(65536):
                got += chunk
                if b"\r\n\r\n" in got and b"Content-Length" in got:
                    head_, _, rest = got.partition(b"\r\n\r\n")
                    n = int(re.search(rb"Content-Length: (\d+)", head_).group(1))
                    if len(rest) >= n: break
        return got


def status_of(answer: bytes) -> int:
    assert answer, "no answer"
    return int(answer.split(b" ", 2)[1])


def post(path: str, length: str|None = None, token: bool = False, chunked: bool = False) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    if token: lines.append("Authorization: Bearer hf_anything")
    if length is not None: lines.append(f"Content-Length: {length}")
    if chunked: lines.append("Transfer-Encoding: chunked")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_the_local_hub_checks_the_token_before_it_reads_a_body(small_hub):
    "A 10 GiB body announced without a token: 401 at once, nothing read."
    endpoint, _, _ = small_hub
    start = time.monotonic()
    answer = raw(endpoint, post("/api/repos/create", length=str(10 * 2**30)), timeout=10)
    assert status_of(answer) == 401 and time.monotonic() - start < 5, answer[:300]


def test_the_local_hub_bounds_bodies_and_answers_mistakes_4xx(small_hub):
    """With a token: a Content-Length of 18 digits, and an endless chunked body, are 413 (no MemoryError, no unbounded growth);
    other malformed requests are 4xx; the server's terminal shows no traceback."""
    endpoint, _, log = small_hub
    for head in (b"GET /api/models?limit=abc HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /api/models?limit=-4 HTTP/1.1\r\nHost: x\r\n\r\n",
                 b"GET /org/one/resolve/main/config.json HTTP/1.1\r\nHost: x\r\nRange: bytes=abc\r\n\r\n",
                 b"GET /api/models/org/one?expand=%ff HTTP/1.1\r\nHost: x\r\n\r\n",
                 post("/api/models/org/one/commit/main", length="-5", token=True),
                 post("/api/models/org/one/commit/main", length="12", token=True) + b"not json at"):
        answer = raw(endpoint, head, close_write=True)
        assert 400 <= status_of(answer) < 500 or status_of(answer) == 200, (head, answer[:300])
    assert status_of(raw(endpoint, post("/api/repos/create", length="999999999999999999", token=True))) == 413
    host, port = endpoint.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(post("/api/repos/create", token=True, chunked=True))
        chunk, sent, answer = b"%x\r\n%s\r\n" % (2**20, b"x" * 2**20), 0, b""
        with contextlib.suppress(OSError):
            while sent < 2**31:   # 2 GiB at most: the server must stop reading long before
                s.sendall(chunk); sent += 2**20
        with contextlib.suppress(OSError): answer = s.recv(65536)
    assert sent < 2**31 and (not answer or status_of(answer) == 413), (sent, answer[:300])
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


def test_the_local_hub_refuses_a_chunked_commit_cut_short(small_hub):
    "A chunked commit whose body ends before its last chunk: 400, and the repo is unchanged (no half commit)."
    from huggingface_hub import HfApi
    endpoint, _, log = small_hub
    api = HfApi(endpoint=endpoint, token="hf_anything")
    before = api.model_info("org/one").sha
    header = json.dumps({"key": "header", "value": {"summary": "half", "description": ""}}) + "\n"
    add = json.dumps({"key": "file", "value": {"path": "added.txt", "content": "aGVsbG8=", "encoding": "base64"}}) + "\n"
    body = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (header.encode(), add.encode()))   # no "0\r\n\r\n": cut short
    answer = raw(endpoint, post("/api/models/org/one/commit/main", token=True, chunked=True), body, close_write=True)
    assert status_of(answer) == 400, answer[:300]
    assert api.model_info("org/one").sha == before and "added.txt" not in api.list_repo_files("org/one")
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


# 7: long fields on the model page -------------------------------------------------------------------------------------

def test_a_long_note_is_cut_and_the_whole_is_a_link_away(tmp_path):
    from fastapi.testclient import TestClient
    from neuron_support.app import load_results
    from neuron_support.publish import demo_rows
    from neuron_support.publish import empty_table, merge, table_path, write_table
    pair = "cpu-aot_eager-torch2.13.0/transformers-5.24.0"
    rows = demo_rows(pair, "2025-07-01T10:00:00Z", {"org/long": "FAIL(gen)"})
    note, error = "n" * 10_000_000, "e" * 5_000_000
    rows[0] |= {"notes": note, "error": error}
    write_table(merge(empty_table(), rows), table_path(tmp_path, pair))
    results = load_results(str(tmp_path), popularity=False)
    status, html = results.model_page("org/long")
    assert status == 200 and len(html) < 200_000, len(html)
    links = re.findall(r'href="(/field\?[^"]+)"', html)
    assert len(links) == 2, links
    client = TestClient(results.web_app())
    whole = [client.get(link.replace("&amp;", "&")) for link in links]
    assert [r.status_code for r in whole] == [200, 200] and sorted(r.text for r in whole) == sorted([error, note])
    assert all(r.headers["content-type"].startswith("text/plain") for r in whole)


# 9: a killed sweep's Ray ----------------------------------------------------------------------------------------------

def lingering(folder: Path) -> list:
    "The live processes whose working folder is `folder` (the sweep's and Ray's: Ray's processes start where the sweep does)."
    found = []
    for d in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if os.readlink(d / "cwd") == str(folder) and (d / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append((int(d.name), (d / "cmdline").read_bytes().replace(b"\0", b" ")[:80].decode(errors="replace")))
    return found


def agents(folder: Path) -> list:
    "Ray's agents started where the sweep was."
    return [p for p in lingering(folder) if p[1].startswith("ray::") and "Agent" in p[1]]


def test_a_killed_sweep_takes_its_ray_agents_included(tmp_path, hub):
    "kill -9 of `neuron-support sweep` once its Ray is up: within 10 s, nothing it started runs on, Ray's agents included."
    work = tmp_path / "work"; work.mkdir()
    sweep = subprocess.Popen([CLI, "sweep", "--out", "out", "--slots", "1", "--only", f"{ORG}/tiny-llama-a"], cwd=work,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not agents(work) and sweep.poll() is None: time.sleep(0.5)
    assert sweep.poll() is None and agents(work), sweep.stderr.read()[-3000:] if sweep.poll() is not None else "no agent"
    time.sleep(3)   # the agents have named themselves (ray::DashboardAgent), which overwrote the environment of about half of them
    os.kill(sweep.pid, signal.SIGKILL); sweep.wait()
    end = time.monotonic() + 10
    while (left := lingering(work)) and time.monotonic() < end: time.sleep(0.5)
    for pid, _ in left: os.kill(pid, signal.SIGKILL)   # this test's own leftovers, by their ids
    assert not left, left
