"The results tables as writers and readers meet them: merge rules, real concurrent and killed writer processes, the card, the diff."
import json, os, re, signal, subprocess, sys, textwrap, time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from neuron_support.publish import (COLUMNS, RESULTS, SCHEMA, UsageError, add_rows, diff, diff_json, diff_pairs, format_diff, frame, merge, pairs, read_table, read_tables, render_card, synthetic_row, table_path, validate, write_table)

PAIR = "cpu-aot_eager-torch2.13.0/transformers-5.24.0"
NEURON_A = "neuronxcc-2.20.1.0/transformers-5.24.0"
NEURON_B = "neuronxcc-2.21.33363.0/transformers-5.24.0"
DEMO_IDS = ["demo/SmolLM2-135M-Instruct", "demo/all-MiniLM-L6-v2", "demo/tiny-llama", "demo/tiny-qwen3", "demo/tiny-qwen3-moe",
            "demo/tiny-mixtral", "demo/tiny-t5", "demo/tiny-bart", "demo/tiny-llava", "demo/tiny-gemma3",
            "demo/tiny-bert-mlm", "demo/tiny-roberta-mlm", "demo/quantized-llama", "demo/remote-code"]


def rows_for(ids, pair=PAIR, tested_at="2025-06-01T12:00:00Z", **kw):
    "Realistic rows, all columns, for the demo's ids: the two exclusion entries EXCLUDED, one failure, the rest PASS."
    def result(m): return "EXCLUDED" if m in ("demo/quantized-llama", "demo/remote-code") else "FAIL(gen)" if m == "demo/tiny-gemma3" else "PASS"
    return [synthetic_row(m, kw.get("result", result(m)), pair=pair, tested_at=tested_at) for m in ids]


def by_model(df): return df.set_index("model_id")


# ---- merge rules -------------------------------------------------------------------------------------------

def test_a_new_row_replaces_the_previous_one(tmp_path):
    add_rows(tmp_path, PAIR, [synthetic_row("demo/tiny-llama", "FAIL(gen)")])
    df = add_rows(tmp_path, PAIR, [synthetic_row("demo/tiny-llama", "PASS", tested_at="2025-07-01T00:00:00Z", wall_s=99.0)])
    assert len(df) == 1 and df.result[0] == "PASS" and df.wall_s[0] == 99.0
    assert read_table(table_path(tmp_path, PAIR)).equals(df)


def test_excluded_is_replaced_by_a_run(tmp_path):
    add_rows(tmp_path, PAIR, [synthetic_row("demo/tiny-t5", "EXCLUDED")])
    assert read_table(table_path(tmp_path, PAIR)).runner.isna().all()
    df = add_rows(tmp_path, PAIR, [synthetic_row("demo/tiny-t5", "FAIL(load)", tested_at="2025-07-01T00:00:00Z")])
    assert by_model(df).loc["demo/tiny-t5", ["result", "runner", "neuron_cores"]].tolist() == ["FAIL(load)", "run_dense", 1]


def test_models_that_left_the_list_keep_their_rows(tmp_path):
    add_rows(tmp_path, PAIR, rows_for(DEMO_IDS), selection={m: i + 1 for i, m in enumerate(DEMO_IDS)})
    later = DEMO_IDS[:3]
    df = add_rows(tmp_path, PAIR, rows_for(later, tested_at="2025-08-01T00:00:00Z"), selection={m: i + 1 for i, m in enumerate(later)})
    assert sorted(df.model_id) == sorted(DEMO_IDS)
    kept = by_model(df).loc["demo/tiny-bart"]
    assert kept.result == "PASS" and kept.tested_at == pd.Timestamp("2025-06-01T12:00:00Z")


def test_selection_rank_is_refreshed_and_emptied(tmp_path):
    add_rows(tmp_path, PAIR, rows_for(DEMO_IDS[:4]), selection={DEMO_IDS[0]: 1, DEMO_IDS[1]: 2, DEMO_IDS[2]: 3, DEMO_IDS[3]: 4})
    df = by_model(add_rows(tmp_path, PAIR, [], selection={DEMO_IDS[3]: 1, DEMO_IDS[1]: 2}))
    assert df.selection_rank.isna().to_dict() == {DEMO_IDS[0]: True, DEMO_IDS[1]: False, DEMO_IDS[2]: True, DEMO_IDS[3]: False}
    assert df.selection_rank.fillna(0).to_dict() == {DEMO_IDS[0]: 0, DEMO_IDS[1]: 2, DEMO_IDS[2]: 0, DEMO_IDS[3]: 1}
    # without a selection, the ranks stay as the latest selection left them
    assert by_model(add_rows(tmp_path, PAIR, rows_for(DEMO_IDS[4:5]))).selection_rank.fillna(0)[DEMO_IDS[3]] == 1


def test_a_row_for_another_pair_is_refused(tmp_path):
    with pytest.raises(UsageError, match="library_version"):
        add_rows(tmp_path, PAIR, rows_for(DEMO_IDS[:1], pair="cpu-aot_eager-torch2.13.0/transformers-5.23.0"))
    assert not table_path(tmp_path, PAIR).exists()


# ---- schema ------------------------------------------------------------------------------------------------

def test_the_schema_is_the_cards_columns_then_ours():
    assert COLUMNS[:25] == ["model_id", "library", "neuron_cores", "runner", "selection_rank", "result", "notes", "exclusion",
                            "error", "cpu_match", "english", "wall_s", "hbm_peak_gb", "hbm_capacity_gb", "neuronx_cc",
                            "library_version", "transformers", "accelerate", "torch_neuronx", "torch", "nki", "python",
                            "neuron_driver", "tested_at", "run_py"]
    assert COLUMNS[25:] == ["revision", "task", "device", "backend", "compile_s", "tokens_per_s", "error_signature", "notebook",
                            "check", "reference_cached", "graphs", "graphs_cached", "hbm_reserved_gb", "cpu_eager",
                            "graph_breaks", "graph_break", "model_type"]
    assert SCHEMA.field("tested_at").type.tz == "UTC"


@pytest.mark.parametrize("change, column", [
    (lambda df: df.drop(columns="hbm_peak_gb"), "hbm_peak_gb"),
    (lambda df: df.assign(neuron_cores=df.neuron_cores.astype(str)), "neuron_cores"),
    (lambda df: df.assign(tested_at=df.tested_at.astype(str).str.slice(0, 10)), "tested_at"),
    (lambda df: df.assign(result="FAIL"), "result"),
    (lambda df: df.assign(extra_column=1), "extra_column"),
])
def test_a_file_with_the_wrong_schema_names_the_column(tmp_path, change, column):
    path = table_path(tmp_path, PAIR); path.parent.mkdir(parents=True)
    change(frame(rows_for(DEMO_IDS[:3]))).to_parquet(path)
    with pytest.raises(UsageError, match=f"'{column}'"): read_table(path)
    with pytest.raises(UsageError, match=f"'{column}'"): add_rows(tmp_path, PAIR, rows_for(DEMO_IDS[3:4]))
    with pytest.raises(UsageError, match=f"'{column}'"): write_table(change(frame(rows_for(DEMO_IDS[:3]))), path)


def test_a_truncated_file_is_refused(tmp_path):
    "What a non-atomic writer killed mid-write would leave: the read check catches it."
    path = write_table(frame(rows_for(DEMO_IDS)), table_path(tmp_path, PAIR))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(UsageError, match="not a readable parquet"): read_table(path)


def test_pandas_reads_the_file_with_the_schemas_types(tmp_path):
    path = write_table(frame(rows_for(DEMO_IDS)), table_path(tmp_path, PAIR))
    df = pd.read_parquet(path)
    assert list(df.columns) == COLUMNS
    assert str(df.neuron_cores.dtype) == "Int64" and str(df.tested_at.dtype) == "datetime64[us, UTC]"
    assert df.equals(read_table(path))


# ---- real processes: concurrent writers, a killed writer ---------------------------------------------------

WRITER = textwrap.dedent("""
    import sys
    from neuron_support.publish import add_rows, synthetic_row
    data_dir, pair, who, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    for i in range(n):
        add_rows(data_dir, pair, [synthetic_row(f"{who}/model-{i}")], selection=None)
""")


def test_concurrent_publishers_lose_no_row(tmp_path):
    n = 25
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), PAIR, who, str(n)]) for who in ("host-a", "host-b")]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    df = read_table(table_path(tmp_path, PAIR))
    assert sorted(df.model_id) == sorted(f"{who}/model-{i}" for who in ("host-a", "host-b") for i in range(n))
    assert not list(table_path(tmp_path, PAIR).parent.glob("*.tmp"))


KILLED = textwrap.dedent("""
    import sys
    from neuron_support.publish import frame, synthetic_row, write_table, table_path
    data_dir, pair = sys.argv[1], sys.argv[2]
    big = "x = 1\\n" * 400
    versions = [frame([synthetic_row(f"demo/model-{i}", run_py=big) for i in range(n)]) for n in (3000, 3001)]
    path = table_path(data_dir, pair)
    write_table(versions[0], path)
    print("ready", flush=True)
    while True:
        for v in versions: write_table(v, path)
""")


def stopped(pid:int)->bool:
    "Whether a process has stopped (a SIGSTOP landed): its state in /proc is T."
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("T", "t")


def test_a_writer_killed_mid_write_leaves_the_previous_file(tmp_path):
    path = table_path(tmp_path, PAIR)
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(tmp_path), PAIR], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        deadline, tmp = time.monotonic() + 120, []
        while not tmp and time.monotonic() < deadline:   # catch the writer while its temporary file is being written:
            if not list(path.parent.glob(f".{path.name}.*.tmp")): continue
            os.kill(proc.pid, signal.SIGSTOP)             # frozen, so that it cannot rename the file before the kill
            # a signal lands when the writer next enters the kernel: until it has stopped, it may still rename the file (a slow machine's
            # CI caught the writer's file, then found it renamed after the kill)
            while not stopped(proc.pid) and time.monotonic() < deadline: time.sleep(0.001)
            tmp = list(path.parent.glob(f".{path.name}.*.tmp"))
            if not tmp: os.kill(proc.pid, signal.SIGCONT)  # it had renamed it in between: try again
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill(); proc.wait()
    assert tmp, "never caught the writer mid-write"
    assert list(path.parent.glob(f".{path.name}.*.tmp")) == tmp, "the kill did not land mid-write"
    df = read_table(path)                                   # the previous file, complete
    assert len(df) in (3000, 3001) and df.model_id.is_unique
    add_rows(tmp_path, PAIR, [synthetic_row("demo/after-the-crash")])   # the next writer cleans up
    assert not list(path.parent.glob("*.tmp")) and len(read_table(path)) == len(df) + 1


# ---- the card ----------------------------------------------------------------------------------------------

def dataset(tmp_path):
    "A dataset folder with two Neuron pairs and a CPU pair, and the executed notebooks of the runs."
    add_rows(tmp_path, NEURON_A, rows_for(DEMO_IDS, pair=NEURON_A), selection={m: i + 1 for i, m in enumerate(DEMO_IDS)})
    add_rows(tmp_path, NEURON_B, rows_for(DEMO_IDS[:6], pair=NEURON_B) + [synthetic_row("demo/tiny-bart", "FAIL(load)", pair=NEURON_B),
             synthetic_row("demo/tiny-device-fail", "FAIL(gen)", pair=NEURON_B, cpu_eager="ok")],
             selection={m: i + 1 for i, m in enumerate(DEMO_IDS[:6])})
    add_rows(tmp_path, PAIR, rows_for(DEMO_IDS[:2]))
    for pair, t in read_tables(tmp_path).items():
        for nb in t.notebook.dropna():
            (tmp_path / nb).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / nb).write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return tmp_path


def section(card, title):
    return card.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def code_blocks(text, lang):
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_the_card_renders_the_pairs_and_their_counts(tmp_path):
    card = render_card(read_tables(dataset(tmp_path)), "me/neuron-support")
    front = yaml.safe_load(card.split("---\n")[1])
    assert front["configs"][0]["data_files"][0]["path"] == "data/*/*.parquet"
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.glob(front["configs"][0]["data_files"][0]["path"])) == \
        sorted(f"data/{p}.parquet" for p in (NEURON_A, NEURON_B, PAIR))
    results = section(card, "Results")
    lines = [l for l in results.splitlines() if l.startswith("| `")]
    assert [l.split("|")[1].strip() for l in lines] == ["`neuronxcc-2.21.33363.0`", "`neuronxcc-2.20.1.0`", "`cpu-aot_eager-torch2.13.0`"]
    header = [h.strip(" `") for h in next(l for l in results.splitlines() if l.startswith("| compiler")).split("|")[1:-1]]
    for line, pair in zip(lines, (NEURON_B, NEURON_A, PAIR)):
        cells = dict(zip(header, [c.strip() for c in line.split("|")[1:-1]]))
        counts = read_table(table_path(tmp_path, pair)).result.value_counts()
        assert {r: int(cells[r]) for r in RESULTS} == {r: int(counts.get(r, 0)) for r in RESULTS}
        assert int(cells["models"]) == counts.sum()
    assert "| `neuronxcc-2.21.33363.0` | [`transformers-5.24.0`](data/neuronxcc-2.21.33363.0/transformers-5.24.0.parquet) | 8 | 6 | 1 | 1 | 0 | 0 | 0 | 0 |" in card
    for r in RESULTS: assert f"| `{r}` |" in section(card, "What is tested")


def test_reproducing_a_run_as_the_card_says(tmp_path):
    "Follow the card: its python block fetches a row's run_py into run.py; its bash block runs it."
    data = dataset(tmp_path / "dataset")
    card = render_card(read_tables(data), "me/neuron-support")
    repro = section(card, "Reproducing a run")
    [fetch], [run, _sync] = code_blocks(repro, "python"), code_blocks(repro, "bash")
    m = re.search(r'hf://datasets/me/neuron-support/(data/\S+\.parquet)".*model_id == "([^"]+)"', fetch, flags=re.S)
    assert m, fetch
    path, model = m[1], m[2]
    work = tmp_path / "work"; work.mkdir()
    local = fetch.replace("hf://datasets/me/neuron-support/", f"{data}/")     # the same layout as the repo, read locally
    subprocess.run([sys.executable, "-c", local], cwd=work, check=True)
    row = by_model(read_table(data / path)).loc[model]
    assert (work / "run.py").read_text() == row.run_py
    assert run.strip() == "python3 run.py"
    out = subprocess.run(run.split(), cwd=work, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == {"model_id": model, "result": row.result}
    assert path == f"data/{NEURON_B}.parquet" and model == DEMO_IDS[0]


# ---- diff --------------------------------------------------------------------------------------------------

def test_diff_lists_exactly_the_regressions_and_fixes(tmp_path):
    a = {"demo/stays-pass": "PASS", "demo/regresses": "PASS", "demo/fixed": "FAIL(gen)", "demo/moves": "FAIL(load)",
         "demo/stays-fail": "FAIL(output)", "demo/leaves": "PASS", "demo/excluded-then-run": "EXCLUDED", "demo/run-then-excluded": "FAIL(gen)"}
    b = {"demo/stays-pass": "PASS", "demo/regresses": "FAIL(forward)", "demo/fixed": "PASS", "demo/moves": "FAIL(gen)",
         "demo/stays-fail": "FAIL(output)", "demo/arrives": "FAIL(other)", "demo/excluded-then-run": "PASS", "demo/run-then-excluded": "EXCLUDED"}
    add_rows(tmp_path, NEURON_A, [synthetic_row(m, r, pair=NEURON_A) for m, r in a.items()])
    add_rows(tmp_path, NEURON_B, [synthetic_row(m, r, pair=NEURON_B) for m, r in b.items()])
    d = diff_pairs(tmp_path, NEURON_A, NEURON_B)
    assert d[["model_id", "change", "result_a", "result_b"]].fillna("-").values.tolist() == [
        ["demo/regresses", "regressed", "PASS", "FAIL(forward)"],
        ["demo/fixed", "fixed", "FAIL(gen)", "PASS"],
        ["demo/moves", "failure changed", "FAIL(load)", "FAIL(gen)"],
        ["demo/arrives", "appeared", "-", "FAIL(other)"],
        ["demo/excluded-then-run", "appeared", "-", "PASS"],
        ["demo/leaves", "disappeared", "PASS", "-"],
        ["demo/run-then-excluded", "disappeared", "FAIL(gen)", "-"]]
    sig = by_model(d).loc["demo/regresses"]
    assert sig.error_signature_b == synthetic_row("demo/regresses", "FAIL(forward)")["error_signature"] and pd.isna(sig.error_signature_a)
    assert sig.error_signature_b == "RuntimeError: expected scalar type BFloat16 but found Float"
    assert by_model(d).loc["demo/moves"].error_signature_a.startswith("OSError")
    text = format_diff(d)
    assert text.splitlines()[0] == "1 regressed, 1 fixed, 1 failure changed, 2 appeared, 2 disappeared"
    assert re.search(r"demo/regresses\s+regressed\s+PASS\s+FAIL\(forward\)\s+RuntimeError: expected scalar", text)
    records = json.loads(diff_json(d))
    assert [r["model_id"] for r in records] == d.model_id.tolist() and records[0]["result_a"] == "PASS"
    assert diff(read_table(table_path(tmp_path, NEURON_A)), read_table(table_path(tmp_path, NEURON_A))).empty
    with pytest.raises(UsageError, match="no table"): diff_pairs(tmp_path, NEURON_A, "neuronxcc-9.9/transformers-5.24.0")


# ---- against the local Hub ---------------------------------------------------------------------------------

TOKEN = "hf_local_test_writer"   # the local Hub accepts any token for writes; a real one is never used here


def local_tables(data_dir):
    "Every pair's table, concatenated, in a stable order: what the whole dataset should read as."
    df = pd.concat(read_tables(data_dir).values(), ignore_index=True)
    return df.sort_values(["model_id", "neuronx_cc", "device", "library_version"], ignore_index=True)


@pytest.fixture
def hub_for_cards(hub):
    "The local Hub, which answers the card check that huggingface_hub makes before committing a README.md."
    from huggingface_hub.utils import get_session
    r = get_session().post(f"{hub}/api/validate-yaml", json={"content": "---\nlicense: mit\n---\n", "repoType": "dataset"})
    assert r.status_code == 200, r.text  # huggingface_hub calls it before committing a README.md
    return hub


def commits(repo):
    from huggingface_hub import HfApi
    return len(HfApi().list_repo_commits(repo, repo_type="dataset"))


def test_published_rows_read_back_the_same(hub_for_cards, tmp_path, monkeypatch):
    from neuron_support.publish import publish
    data = dataset(tmp_path / "dataset")
    repo = "neuron-support-test/results-readback"
    done = publish(data, repo, token=TOKEN)
    assert sorted(c.path for c in done) == sorted(["README.md", *(f"data/{p}.parquet" for p in pairs(data)),
                                                   *(str(p.relative_to(data)) for p in data.glob("runs/*/*/*/run.ipynb"))])
    assert {c.action for c in done} == {"add"}
    back = pd.read_parquet(f"hf://datasets/{repo}/data")
    back = back.sort_values(["model_id", "neuronx_cc", "device", "library_version"], ignore_index=True)
    pd.testing.assert_frame_equal(validate(back, unique=False), local_tables(data))
    # the card's query, verbatim, against the Hub and against the local tables
    from huggingface_hub import hf_hub_download
    card = Path(hf_hub_download(repo, "README.md", repo_type="dataset")).read_text()
    assert not (data / "README.md").exists()   # the folder is left as it was
    [query] = code_blocks(section(card, "Querying"), "python")
    lines = query.strip().splitlines()
    at = next(i for i, l in enumerate(lines) if "model_id ==" in l)
    setup, last, device_failures = lines[:at], lines[at], lines[-1]
    scope = {}
    exec("\n".join(setup), scope)
    got = eval(last, scope)
    df = local_tables(data)
    # the device's failures: the one whose call the CPU runs eagerly, not the one with no CPU verdict
    assert eval(device_failures, scope).model_id.tolist() == ["demo/tiny-device-fail"]
    model = re.search(r'model_id == "([^"]+)"', last)[1]
    want = df[df.model_id == model][["neuronx_cc", "library", "library_version", "neuron_cores", "result"]]
    assert len(want) == 3
    pd.testing.assert_frame_equal(got.sort_values("neuronx_cc", ignore_index=True), want.sort_values("neuronx_cc", ignore_index=True),
                                  check_dtype=False)
    # and its "Reproducing a run" recipe, verbatim, against the Hub
    monkeypatch.chdir(tmp_path)
    [fetch] = code_blocks(section(card, "Reproducing a run"), "python")
    exec(fetch, {})
    assert (tmp_path / "run.py").read_text() == by_model(read_table(table_path(data, NEURON_B))).loc[model].run_py
    assert TOKEN not in card


def test_only_changed_files_are_uploaded(hub_for_cards, tmp_path):
    from neuron_support.publish import publish
    data = dataset(tmp_path / "dataset")
    repo = "neuron-support-test/results-changes"
    assert publish(data, repo, token=TOKEN)
    n = commits(repo)
    assert publish(data, repo, token=TOKEN) == [] and commits(repo) == n          # nothing new: no upload, no commit
    # a new run of a model, with the same result: only its pair's table changes
    add_rows(data, NEURON_A, [synthetic_row(DEMO_IDS[1], "PASS", pair=NEURON_A, tested_at="2025-09-01T00:00:00Z", wall_s=7.0)])
    dry = publish(data, repo, token=TOKEN, dry_run=True)
    assert [(c.path, c.action) for c in dry] == [(f"data/{NEURON_A}.parquet", "update")] and commits(repo) == n
    assert publish(data, repo, token=TOKEN) == dry and commits(repo) == n + 1
    assert publish(data, repo, token=TOKEN) == []
    # a new model: the table and the card's counts change
    add_rows(data, PAIR, [synthetic_row("demo/tiny-qwen3", "FAIL(output)")])
    assert sorted(c.path for c in publish(data, repo, token=TOKEN)) == ["README.md", f"data/{PAIR}.parquet"]
    assert commits(repo) == n + 2
    from huggingface_hub import hf_hub_download
    got = read_table(hf_hub_download(repo, f"data/{PAIR}.parquet", repo_type="dataset"))
    pd.testing.assert_frame_equal(got, read_table(table_path(data, PAIR)))


def test_publishing_without_a_token_is_a_clear_error(hub, tmp_path):
    from neuron_support.publish import publish
    data = dataset(tmp_path / "dataset")
    with pytest.raises(UsageError, match="HF_TOKEN"):
        publish(data, "neuron-support-test/results-no-token", token=False)


PUBLISHER = """import sys
from neuron_support.publish import publish
publish(sys.argv[1], sys.argv[2], token="hf_local_test_writer")
"""


def publisher(data, repo):
    return subprocess.Popen([sys.executable, "-c", PUBLISHER, str(data), repo], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def two_folders(tmp_path):
    "Two publishers' folders: different models of one pair, and one model both ran (the newer run must win)."
    a, b = tmp_path / "a", tmp_path / "b"
    add_rows(a, PAIR, rows_for(DEMO_IDS[:5]) + [synthetic_row("demo/both", "FAIL(gen)", tested_at="2025-06-01T00:00:00Z")])
    add_rows(b, PAIR, rows_for(DEMO_IDS[5:10], tested_at="2025-06-02T12:00:00Z") + [synthetic_row("demo/both", tested_at="2025-06-02T00:00:00Z")])
    return a, b


def published_table(repo):
    from huggingface_hub import HfApi, hf_hub_download
    head = HfApi().dataset_info(repo).sha
    return by_model(read_table(hf_hub_download(repo, f"data/{PAIR}.parquet", repo_type="dataset", revision=head)))


@pytest.mark.parametrize("together", [True, False], ids=["at-once", "one-after-the-other"])
def test_two_publishers_lose_nothing(hub_for_cards, tmp_path, together):
    "Two publish processes with different rows of one pair, at once or in turn: the repo ends with both (issue 15)."
    a, b = two_folders(tmp_path)
    repo = f"neuron-support-test/two-publishers-{'together' if together else 'in-turn'}"
    if together:
        ps = [publisher(a, repo), publisher(b, repo)]
        for p in ps: assert p.wait(timeout=300) == 0, p.stderr.read()[-2000:]
    else:
        for d in (a, b): assert publisher(d, repo).wait(timeout=300) == 0
    table = published_table(repo)
    assert sorted(table.index) == sorted(DEMO_IDS[:10] + ["demo/both"])
    assert table.loc["demo/both", "result"] == "PASS"   # the newer run
    assert not (a / "README.md").exists() and not (b / "README.md").exists()
