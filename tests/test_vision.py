"""Issue 29: transformers' vision runners; issue 40: its vision-language models; issue 45: dense vision. The demo's eight vision models and its two
vision-language models in the Hub's layout (Qwen2.5-VL, SmolVLM) swept through the real command (the session's shared sweep,
tests/conftest.py), their notebooks showing the photograph and both rankings (or both texts and the image tokens), run.py
rerun alone, and each check failing on damaged weights."""
import json, re

import nbformat
import pytest

from neuron_support.demo import build_demo
from neuron_support.publish import read_table, table_path
from neuron_support.stack import pair_key
from neuron_support.registry import library_stack
from neuron_support.sweep import run_folder
from neuron_support.processes import first_line
from conftest import rerun_alone, damaged_run

TR = library_stack("transformers", "cpu", found={})
PAIR = pair_key(TR)
DEMO = "neuron-support-demo"
VISION = {f"{DEMO}/tiny-vit": "run_image_classifier", f"{DEMO}/tiny-dinov2": "run_image_encoder", f"{DEMO}/tiny-clip": "run_zero_shot_image",
          f"{DEMO}/tiny-dpt-depth": "run_depth_estimation", f"{DEMO}/tiny-segformer-ade": "run_semantic_segmentation", f"{DEMO}/tiny-yolos": "run_object_detection",
          f"{DEMO}/tiny-owlv2": "run_zero_shot_detection", f"{DEMO}/tiny-mask2former-ade": "run_universal_segmentation"}


def test_the_demo_sweep_of_the_vision_models(tmp_path, demo_hub, demo_sweep_of_libraries):
    """Each vision model of the session's sweep: its runner, one core, PASS, checked against the CPU with `cpu_match` Y or a
    near-tie, its prediction in `notes`; the photograph beside its notebook, and the notebook showing it and the rankings."""
    out, p = demo_sweep_of_libraries   # read only
    assert p.returncode == 0, p.stderr[-3000:]
    table = read_table(table_path(out, PAIR)).set_index("model_id")
    for model, runner in VISION.items():
        row = table.loc[model]
        assert (row.runner, row.neuron_cores, row.result, row.check) == (runner, 1, "PASS", "cpu"), row[["result", "notes", "error"]]
        assert row.cpu_match == "Y" or row.cpu_match.startswith(("~ near-tie", "~ bf16's class")), row.cpu_match   # a segmentation's pixels of bf16's own class are said so
        assert row.task == {"run_image_classifier": "image-classification", "run_image_encoder": "image-feature-extraction",
                            "run_zero_shot_image": "zero-shot-image-classification", "run_depth_estimation": "depth-estimation",
                            "run_semantic_segmentation": "image-segmentation", "run_object_detection": "object-detection",
                            "run_zero_shot_detection": "zero-shot-object-detection", "run_universal_segmentation": "image-segmentation"}[runner]
        assert "libraries.transformers.vision" in row.run_py.split("\nPLAN = ")[0] and "def run_dense(" not in row.run_py
        folder = run_folder(out, PAIR, model)
        drawn = ("run_depth_estimation", "run_semantic_segmentation", "run_object_detection", "run_zero_shot_detection", "run_universal_segmentation")
        pictures = ["input.png", "image.png", "image_cpu.png"] if runner in drawn else ["input.png"]   # a map or boxes: the device's and the CPU's drawn
        assert json.loads((folder / "outcome.json").read_text())["images"] == pictures and all((folder / p).is_file() for p in pictures)
        outputs = [o for c in nbformat.read(folder / "run.ipynb", as_version=4).cells if c.cell_type == "code" for o in c.get("outputs", [])]
        assert any("image/png" in o.get("data", {}) for o in outputs)   # the photograph
        tables = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {}) and "CPU bf16" in o["data"]["text/html"]]
        assert len(tables) == 1, model   # the comparison, rank by rank (an encoder's: by kind of row)
    vit, clip = table.loc[f"{DEMO}/tiny-vit"], table.loc[f"{DEMO}/tiny-clip"]
    assert re.fullmatch(r"top-5 on cpu: (?:[^;|]+ [01]\.\d\d; ){4}[^;|]+ [01]\.\d\d \| CPU fp32: (?:[^;|]+ [01]\.\d\d; ){4}[^;|]+ [01]\.\d\d", vit.notes), vit.notes
    assert re.fullmatch(r"labels on cpu: ((?:cat|dog|car|bird|house) [01]\.\d\d(, )?){5} \| CPU fp32: ((?:cat|dog|car|bird|house) [01]\.\d\d(, )?){5}", clip.notes), clip.notes
    assert table.loc[f"{DEMO}/tiny-dinov2", "notes"].startswith("hidden states 32-d, 258 rows (pooled, then each patch): min cosine ")
    assert re.fullmatch(r"depth on cpu: relative error 0\.\d{4} to CPU fp32 \(CPU bf16 0\.\d{4}\), cosine [01]\.\d{5}; fp32's depths \S+ to \S+",
                        table.loc[f"{DEMO}/tiny-dpt-depth", "notes"]), table.loc[f"{DEMO}/tiny-dpt-depth", "notes"]
    shares = r"(?:(?:wall|building|sky|floor|tree|ceiling|road|bed) \d+%(?:, )?){1,3}"
    for name in ("tiny-segformer-ade", "tiny-mask2former-ade"):   # Mask2Former's queries read as a class for each pixel
        assert re.fullmatch(f"classes on cpu: {shares} \\| CPU fp32: {shares}", table.loc[f"{DEMO}/{name}", "notes"]), table.loc[f"{DEMO}/{name}", "notes"]
    boxes = r"\d+ kept: (?:(?:person|bicycle|car|cat|dog|couch|bed|remote) [01]\.\d\d(?:, | and \d+ more)?){1,4}"   # the surest four, the boxes in the notebook and the pictures
    assert re.fullmatch(f"boxes on cpu: {boxes} \\| CPU fp32: {boxes}", table.loc[f"{DEMO}/tiny-yolos", "notes"]), table.loc[f"{DEMO}/tiny-yolos", "notes"]
    queries = r"\d+ kept: (?:(?:cat|eye|ear|dog) [01]\.\d\d(?:, | and \d+ more)?){1,4}"   # OWLv2's labels are the plan's text queries
    assert re.fullmatch(f"boxes on cpu: {queries} \\| CPU fp32: {queries}", table.loc[f"{DEMO}/tiny-owlv2", "notes"]), table.loc[f"{DEMO}/tiny-owlv2", "notes"]
    # run.py stands alone: rerun outside the sweep, in a copy of its folder, it prints the same verdict
    outcome = rerun_alone(run_folder(out, PAIR, f"{DEMO}/tiny-vit"), demo_hub, tmp_path)
    assert (outcome["result"], outcome["cpu_match"], outcome["notes"]) == ("PASS", vit.cpu_match, vit.notes)


@pytest.mark.parametrize("model, want", [("tiny-vit", r"N differs: "), ("tiny-dinov2", r"N first differs at row \d+: cosine"),
                                         ("tiny-clip", r"N first differs at row 1: cosine .* \(image_embeds\)"),
                                         ("tiny-dpt-depth", r"N (relative error \d+\.\d{4}, over twice bf16's|cosine -?\d\.\d{4} with fp32's map)"),
                                         ("tiny-segformer-ade", r"N \d+\.\d% of the pixels a class fp32 puts nats below its own"),
                                         ("tiny-yolos", r"N (the box of fp32's '[a-z]+' at IoU|'[a-z]+' for fp32's|fp32's '[a-z]+' [01]\.\d\d kept|a '[a-z]+' box)")])
def test_each_vision_check_fails_on_damaged_weights(model, want, tmp_path):
    """The test hook `perturb` damages the device's weights: the classifier's, the encoder's, the zero-shot, the depth, the segmentation
    and the detection check each say N. The zero-shot detector and the universal segmenter are held by the detection and the
    segmentation check; the demo's OWLv2 and Mask2Former fail them with damaged weights in 06_vision's examples."""
    outcome, run_py = damaged_run(build_demo() / "models" / DEMO / model, TR, tmp_path)
    assert outcome["result"] == "FAIL(output)" and outcome["check"] == "cpu", outcome
    assert re.match(want, outcome["cpu_match"]), outcome["cpu_match"]
    assert "'perturb': 'noise'" in run_py


VLM = (f"{DEMO}/tiny-qwen2.5-vl", f"{DEMO}/tiny-smolvlm")   # each: 64 image tokens for the photograph (Qwen2.5-VL's patches merged 2 by 2, SmolVLM's shuffled 4 by 4)


def notebook_texts(folder) -> list:
    "The text outputs of an executed run notebook, and whether it shows a picture."
    outputs = [o for c in nbformat.read(folder / "run.ipynb", as_version=4).cells if c.cell_type == "code" for o in c.get("outputs", [])]
    return ["".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream"], any("image/png" in o.get("data", {}) for o in outputs)


def test_the_demo_sweep_of_the_vision_language_models(tmp_path, demo_hub, demo_sweep_of_libraries):
    """Qwen2.5-VL and SmolVLM as the Hub ships them, swept: PASS on one core against the CPU's fp32 generation of the same prompt
    and pixels, the photograph reaching the prompt as 64 image tokens, and the notebook showing the photograph, the image-token
    count and both texts; run.py rerun alone says the same."""
    out, p = demo_sweep_of_libraries   # read only
    assert p.returncode == 0, p.stderr[-3000:]
    table = read_table(table_path(out, PAIR)).set_index("model_id")
    for model in VLM:
        row = table.loc[model]
        assert (row.runner, row.neuron_cores, row.result, row.check, row.task) == ("run_multimodal", 1, "PASS", "cpu", "image-text-to-text"), row[["result", "notes", "error"]]
        assert row.cpu_match == "Y" or row.cpu_match.startswith("~ near-tie"), row.cpu_match
        header = row.run_py.split("\nPLAN = ")[0]
        assert "photo, libraries.transformers.facts, libraries.transformers.load, libraries.transformers.checks, libraries.transformers.generation, libraries.transformers.multimodal" in header and "def run_dense(" not in row.run_py, header
        folder = run_folder(out, PAIR, model)
        outcome = json.loads((folder / "outcome.json").read_text())
        assert outcome["images"] == ["input.png"] and outcome["details"]["image tokens in the prompt"] == 64, outcome.get("details")
        texts, picture = notebook_texts(folder)
        said = "\n".join(texts)
        assert picture and "image tokens in the prompt: 64" in said and "generated: " in said and "CPU fp32 text: " in said, said[-1500:]
        assert "from a prompt holding 64 image tokens" in said   # the run says it as it runs
    qwen = table.loc[VLM[0]]
    outcome = rerun_alone(run_folder(out, PAIR, VLM[0]), demo_hub, tmp_path)
    assert (outcome["result"], outcome["cpu_match"], outcome["notes"]) == ("PASS", qwen.cpu_match, qwen.notes)


def test_the_demo_sweep_of_the_captioner(demo_sweep_of_libraries):
    """The tiny ViT-GPT2 (a vision encoder-decoder in the Hub's layout), swept: `run_image_to_text`, the photograph alone and no
    prompt, PASS on one core against the CPU's fp32 generation from the same pixels; the caption written under the photograph,
    the device's and the CPU's, beside its notebook and in it. (Its run.py carries the modules of Qwen2.5-VL's, which the test above reruns alone.)"""
    out, p = demo_sweep_of_libraries   # read only
    assert p.returncode == 0, p.stderr[-3000:]
    model = f"{DEMO}/tiny-vit-gpt2"
    row = read_table(table_path(out, PAIR)).set_index("model_id").loc[model]
    assert (row.runner, row.neuron_cores, row.result, row.check, row.task) == ("run_image_to_text", 1, "PASS", "cpu", "image-to-text"), row[["result", "notes", "error"]]
    assert row.cpu_match == "Y" or row.cpu_match.startswith("~ near-tie"), row.cpu_match
    assert "libraries.transformers.generation, libraries.transformers.multimodal" in row.run_py.split("\nPLAN = ")[0] and "def run_dense(" not in row.run_py
    folder = run_folder(out, PAIR, model)
    outcome = json.loads((folder / "outcome.json").read_text())
    assert outcome["images"] == ["input.png", "image.png", "image_cpu.png"] and all((folder / n).is_file() for n in outcome["images"])
    assert row.notes == first_line(outcome["text"])   # the caption is the row's notes
    texts, picture = notebook_texts(folder)
    said = "\n".join(texts)
    assert picture and "generated: " in said and "CPU fp32 text: " in said and "image tokens" not in said, said[-1500:]


@pytest.mark.parametrize("model", ["tiny-qwen2.5-vl", "tiny-smolvlm", "tiny-vit-gpt2"])
def test_a_vision_language_check_fails_on_damaged_weights(model, tmp_path):
    "The test hook `perturb` damages the device's weights: the generation departs from the CPU's at a token that is no near-tie."
    outcome, run_py = damaged_run(build_demo() / "models" / DEMO / model, TR, tmp_path)
    assert outcome["result"] == "FAIL(output)" and outcome["check"] == "cpu", outcome
    assert outcome["cpu_match"].startswith("N first differs at token "), outcome["cpu_match"]
    assert "'perturb': 'noise'" in run_py
