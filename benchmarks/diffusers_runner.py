"""The text-to-image runner (issue 20) against a hand-written `torch.compile` script of the same pipeline.

    PYTHONPATH=. python benchmarks/diffusers_runner.py --size tiny --device cpu      # here: the demo's tiny SD pipeline
    PYTHONPATH=. python benchmarks/diffusers_runner.py --size sd15 --device cuda     # a GPU: Stable Diffusion 1.5's dimensions

`--size sd15` writes a pipeline of random weights with the published dimensions of Stable Diffusion 1.5
(`stable-diffusion-v1-5/stable-diffusion-v1-5`'s unet, vae and text_encoder config.json: an 860M-parameter UNet, the
83M-parameter VAE with its middle attention block, the 123M-parameter CLIP ViT-L/14 text encoder), with the demo's byte
tokenizer (the vocabulary does not change the compute). `--size tiny` is the demo's tiny-sd. Each variant runs in its
own fresh process, on the same device, twice in the same benchmark run, alternating:
- the runner: `diffusers_runs.run_text_to_image` on the plan `make_plan` gives, as a rank runs it (bf16, the
  denoiser and the VAE decoder compiled whole with static shapes, a compiling call then a warm one);
- the floor: the diffusers compile guide's script, written by hand: `from_pretrained(dtype=bf16)`, `.to(device)`,
  `pipe.unet.compile(...)`, `pipe.vae.decoder.compile(...)`, the same prompt, steps, size and latents.
The figures are each variant's first call (compiling) and warm call, in seconds, and the runner's over the floor's.
"""
import argparse, json, platform, subprocess, sys, tempfile, time
from pathlib import Path

SD15 = dict(  # config.json of stable-diffusion-v1-5's unet, vae and text_encoder
    unet=dict(block_out_channels=(320, 640, 1280, 1280), layers_per_block=2, sample_size=64, in_channels=4, out_channels=4,
              down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",), up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3,
              cross_attention_dim=768, attention_head_dim=8, norm_num_groups=32),
    vae=dict(block_out_channels=(128, 256, 512, 512), in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 4,
             up_block_types=("UpDecoderBlock2D",) * 4, latent_channels=4, layers_per_block=2, norm_num_groups=32, sample_size=512),
    text=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12, projection_dim=768))


def write_sd15(dest: Path):
    "A pipeline of random weights with SD 1.5's dimensions and the demo's byte tokenizer, in bf16."
    import torch, transformers
    from diffusers import UNet2DConditionModel, AutoencoderKL, PNDMScheduler, StableDiffusionPipeline
    from neuron_support.libraries.diffusers.demo import clip_tokenizer, save_pipeline
    torch.manual_seed(0)
    text = transformers.CLIPTextModel(transformers.CLIPTextConfig(vocab_size=514, max_position_embeddings=77, bos_token_id=512,
                                                                   eos_token_id=513, pad_token_id=513, **SD15["text"]))
    pipe = StableDiffusionPipeline(unet=UNet2DConditionModel(**SD15["unet"]), vae=AutoencoderKL(**SD15["vae"]), text_encoder=text,
                                   tokenizer=clip_tokenizer(dest / "tokenizer"), safety_checker=None, feature_extractor=None,
                                   scheduler=PNDMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                                           skip_prk_steps=True, steps_offset=1), requires_safety_checker=False)
    save_pipeline(dest, pipe)


RUNNER = """
import json, sys, torch
from neuron_support.registry import make_plan, library_stack
from neuron_support.script import plan_dict
from neuron_support.libraries.diffusers.runs import run_text_to_image
path, device = sys.argv[1], sys.argv[2]
stack = library_stack("diffusers", device, found={})
out = run_text_to_image(plan_dict(make_plan(path, stack=stack), stack), path, stack.device, {"phase": "load"})
print(json.dumps({"first_s": out["first_s"], "warm_s": out["warm_s"], "size": out["size"], "graphs": out["graphs"]}))
"""

FLOOR = """
import json, sys, time, torch
from diffusers import StableDiffusionPipeline
path, device = sys.argv[1], sys.argv[2]
backend = {"cuda": "inductor", "cpu": "aot_eager"}.get(device, "neuron")
pipe = StableDiffusionPipeline.from_pretrained(path, dtype=torch.bfloat16).to(device)
pipe.set_progress_bar_config(disable=True)
pipe.unet.compile(backend=backend, fullgraph=True, dynamic=False)
pipe.vae.decoder.compile(backend=backend, fullgraph=True, dynamic=False)
size = min(pipe.unet.config.sample_size * pipe.vae_scale_factor, 256)
latents = torch.randn((1, 4, size // pipe.vae_scale_factor, size // pipe.vae_scale_factor), generator=torch.Generator("cpu").manual_seed(0))
def call():
    start = time.time()
    with torch.inference_mode():
        pipe("A red fox in the snow, watercolor", num_inference_steps=2, height=size, width=size, latents=latents.to(torch.bfloat16), output_type="pt")
    if device == "cuda": torch.cuda.synchronize()
    return time.time() - start
first, warm = call(), call()
print(json.dumps({"first_s": first, "warm_s": warm, "size": size}))
"""


def measure(code: str, path: Path, device: str) -> dict:
    p = subprocess.run([sys.executable, "-c", code, str(path), device], capture_output=True, text=True, timeout=3600)
    if p.returncode: raise SystemExit(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=["tiny", "sd15"], default="tiny")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    folder = Path(tempfile.mkdtemp()) / a.size
    if a.size == "tiny":
        from neuron_support.libraries.diffusers.demo import save_tiny_sd
        save_tiny_sd(folder, None)
    else: write_sd15(folder)
    rows = []
    for i in range(a.repeats):
        for name, code in (("runner", RUNNER), ("floor", FLOOR)):
            r = measure(code, folder, a.device)
            rows.append({"variant": name, "repeat": i + 1, **r})
            print(json.dumps(rows[-1]), flush=True)
    mean = lambda v, k: sum(r[k] for r in rows if r["variant"] == v) / a.repeats
    print(f"\n{a.size} on {a.device} ({platform.processor() or platform.machine()}), {rows[0]['size']}x{rows[0]['size']} px, 2 steps, "
          f"mean of {a.repeats}:")
    print("| variant | first call (s) | warm call (s) |\n|---|---|---|")
    for v in ("runner", "floor"): print(f"| {v} | {mean(v, 'first_s'):.2f} | {mean(v, 'warm_s'):.3f} |")
    print(f"| runner / floor | {mean('runner', 'first_s') / mean('floor', 'first_s'):.2f} | {mean('runner', 'warm_s') / mean('floor', 'warm_s'):.2f} |")


if __name__ == "__main__":
    main()
