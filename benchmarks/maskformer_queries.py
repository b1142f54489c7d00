"""MaskFormer's missed noise (issue 57): would drawing its decoder's queries apart make its check catch damage?

Draws the builder's tiny MaskFormer (its config, from the architecture table's checkpoint folder) at three seeds, each
three ways: its queries as the builder draws them today (1, 1), and with its query embeddings and every decoder layer's
cross-attention query and key projections scaled (10, 10; 10, 30), each then given Mask2Former's sure head
(`sure_mask_classifier`'s two steps: the mask embedder's last layer scaled to spread the masks' logits, the class
predictor solved by least squares so that query i is label i). It then reads each map as the run does
(`mask_class_logits`) in fp32 and in bf16 (eager, on the CPU) and checks bf16's, and the maps of the model with noise and
with its weights flipped (`perturb_weights`) in bf16, against fp32's with `check_segmentation`: the check of a run,
in one process, with bf16's eager pass standing in for the device's compiled one.

    python benchmarks/maskformer_queries.py   # after `neuron-support architectures --only maskformer` built the checkpoint
"""
import copy, torch, transformers
from pathlib import Path
from neuron_support.demo import demo_dir
from neuron_support.libraries.transformers.demo import photo, LOGIT_SPREAD, layer_input
from neuron_support.libraries.transformers.vision import mask_class_logits, check_segmentation
from neuron_support.core import perturb_weights

transformers.logging.set_verbosity_error()
FOLDER = demo_dir().parent / "architectures" / "maskformer" / "MaskFormerForInstanceSegmentation"


def draw(model, x, queries: float, attention: float, spread: float = 2 * LOGIT_SPREAD):
    "Scale the queries and the cross-attention's projections, then draw the head sure (as Mask2Former's)."
    tm = model.model.transformer_module
    with torch.no_grad():
        tm.queries_embedder.weight.mul_(queries)
        for layer in tm.decoder.layers:
            layer.encoder_attn.k_proj.weight.mul_(attention); layer.encoder_attn.q_proj.weight.mul_(attention)
        last = [m for m in model.mask_embedder.modules() if isinstance(m, torch.nn.Linear)][-1]
        std = float(model(**x).masks_queries_logits.std())
        last.weight.mul_(spread / std); last.bias.mul_(spread / std)
        head = model.class_predictor
        q = layer_input(model, head, x).reshape(-1, head.in_features).float()
        target = torch.full((len(q), head.out_features), -LOGIT_SPREAD)
        target[torch.arange(len(q)), torch.arange(len(q)) % (head.out_features - 1)] = LOGIT_SPREAD
        solved = torch.linalg.lstsq(torch.cat([q, torch.ones(len(q), 1)], 1), target).solution
        head.weight.copy_(solved[:-1].T); head.bias.copy_(solved[-1])


def class_map(model, x, dtype):
    m = copy.deepcopy(model).to(dtype)
    with torch.no_grad(): return mask_class_logits(m(**{k: v.to(dtype) if v.is_floating_point() else v for k, v in x.items()}))


def main():
    proc = transformers.AutoImageProcessor.from_pretrained(FOLDER)
    x = proc(images=photo(), return_tensors="pt")
    config = transformers.AutoConfig.from_pretrained(FOLDER)
    for seed in (0, 1, 2):
        for queries, attention in ((1, 1), (10, 10), (10, 30)):
            torch.manual_seed(seed)
            model = transformers.MaskFormerForInstanceSegmentation(config).eval()
            draw(model, x, queries, attention)
            ref = {"fp32": {"logits": class_map(model, x, torch.float32)}, "bf16": {"logits": class_map(model, x, torch.bfloat16)}}
            said = [f"intact: {check_segmentation(ref, ref['bf16'], None)['cpu_match'][:40]}"]
            for how in ("noise", "swap"):
                damaged = copy.deepcopy(model); perturb_weights(damaged, how)
                c = check_segmentation(ref, {"logits": class_map(damaged, x, torch.bfloat16)}, None)
                said.append(f"{how}: {'PASS' if c['ok'] else 'FAIL'} {c['cpu_match'][:50]}")
            print(f"seed {seed}, queries x{queries}, attention x{attention}: " + " | ".join(said), flush=True)


if __name__ == "__main__": main()
