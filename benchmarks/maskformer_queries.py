"""MaskFormer's missed noise (issue 57): does drawing its decoder's queries apart make its check catch damage, as a run checks?

At random MaskFormer's 100 queries come out nearly the same (its cross-attention, drawn at 0.02, hardly depends on the
query), so its map is one class, damaged or not. This draws the builder's tiny MaskFormer (its config and image
processor, from the architecture table's checkpoint folder) with its query embeddings scaled by Q and every decoder
layer's cross-attention query and key projections by A, then its masks spread and its class predictor solved as
Mask2Former's are (`sure_mask_classifier`'s steps, less its shift), and saves it as the builder does (`save_tiny`: its
seed from the folder's name; `@1`, `@2`, `@3` give three more). It then checks it as a run does: the CPU's references
in fp32 and bf16 with eager attention (`vision_reference`'s `with_attention`), the device's pass in bf16 with the
attention the model loads with (sdpa), compiled (`aot_eager`), intact, with noise on its weights and with its weights
flipped (`perturb_weights`), each against the references by `check_segmentation`.

    python benchmarks/maskformer_queries.py   # after `neuron-support architectures --only maskformer` built the checkpoint
"""
import copy, sys, tempfile, torch, transformers
from pathlib import Path
from neuron_support.demo import demo_dir
from neuron_support.libraries.transformers.demo import photo, save_tiny, sure_mask_classifier
from neuron_support.libraries.transformers.vision import mask_class_logits, check_segmentation
from neuron_support.core import perturb_weights

transformers.logging.set_verbosity_error()
FOLDER = demo_dir().parent / "architectures" / "maskformer" / "MaskFormerForInstanceSegmentation"
SCALES = [(1, 1), (10, 5), (10, 7), (10, 10), (20, 20), (30, 30)]   # (queries, cross-attention's projections)
SEEDS = ["", "@1", "@2", "@3"]   # the builder's folder name, and three more


def drawn(queries: float, attention: float, proc):
    "`save_tiny`'s `prepare`: the queries and their cross-attention scaled, then the head drawn sure as Mask2Former's is, less its shift."
    def prepare(model):
        decoder = model.model.transformer_module
        with torch.no_grad():
            decoder.queries_embedder.weight.mul_(queries)
            for layer in decoder.decoder.layers:
                layer.encoder_attn.k_proj.weight.mul_(attention); layer.encoder_attn.q_proj.weight.mul_(attention)
        return sure_mask_classifier(model, proc, shift=0)
    return prepare


def class_map(model, x, dtype, compiled=False):
    m = copy.deepcopy(model).to(dtype)
    call = torch.compile(m, backend="aot_eager") if compiled else m
    with torch.no_grad(): return mask_class_logits(call(**{k: v.to(dtype) if v.is_floating_point() else v for k, v in x.items()}))


def main():
    torch.set_num_threads(1)
    proc = transformers.AutoImageProcessor.from_pretrained(FOLDER)
    config = transformers.AutoConfig.from_pretrained(FOLDER)
    x = proc(images=photo(), return_tensors="pt")
    cls = transformers.MaskFormerForInstanceSegmentation
    with tempfile.TemporaryDirectory() as tmp:
        for queries, attention in SCALES:
            for seed in SEEDS:
                dest = Path(tmp) / f"{queries}-{attention}" / f"{FOLDER.name}{seed}"
                save_tiny(dest, cls, config, proc, prepare=drawn(queries, attention, proc))
                eager = cls.from_pretrained(dest, dtype=torch.float32, attn_implementation="eager").eval()
                ref = {"fp32": {"logits": class_map(eager, x, torch.float32)}, "bf16": {"logits": class_map(eager, x, torch.bfloat16)}}
                device = cls.from_pretrained(dest, dtype=torch.bfloat16).eval()
                said = []
                for how in ("", "noise", "swap"):
                    model = copy.deepcopy(device)
                    if how: perturb_weights(model, how)
                    c = check_segmentation(ref, {"logits": class_map(model, x, torch.bfloat16, compiled=True)}, None)
                    said.append(f"{how or 'intact'}: {'PASS' if c['ok'] else 'FAIL'} {c['cpu_match'][:48]}")
                    torch._dynamo.reset()
                print(f"queries x{queries}, attention x{attention}, seed {seed or 'builder'}: " + " | ".join(said), flush=True)


if __name__ == "__main__": main()
