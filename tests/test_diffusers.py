"""Issue 20: diffusers, the third library. Its demo sweep through the real command (two tiny pipelines drawn and checked,
a gated one and one with its own UNet code left out), the pictures beside each run and in its notebook, run.py rerun
alone, the pictures in what `publish` uploads, and the picture check failing on damaged weights."""
import json, os, shutil, subprocess, sys
from pathlib import Path

from PIL import Image

from neuron_support.demo import build_demo
from neuron_support.publish import dataset_files, read_table, table_path
from neuron_support.stack import pair_key
from neuron_support.registry import library_stack
from neuron_support.sweep import run_folder
from conftest import damaged_run

DF = library_stack("diffusers", "cpu", found={})
DF_PAIR = pair_key(DF)
ORG = "neuron-support-demo"


def test_the_demo_sweep_of_diffusers(tmp_path, demo_hub, demo_sweep_of_libraries):
    """`neuron-support sweep --demo --library diffusers` (the session's one sweep of the demo's libraries, tests/conftest.py):
    its own table, the UNet and the transformer pipelines (and the UNet one whose VAE has real SD VAEs' middle attention block,
    which torch 2.13's aot_eager refused and 2.14's compiles) PASS with `cpu_match` Y and their pictures saved and shown; the
    gated and the remote-code pipelines excluded."""
    out, p = demo_sweep_of_libraries   # shared with tests/test_libraries.py: read only
    assert p.returncode == 0, p.stderr[-3000:]
    assert "== diffusers: the Hub's diffusers models" in p.stderr
    assert table_path(out, DF_PAIR).name == f"diffusers-{DF.library_version}.parquet"
    table = read_table(table_path(out, DF_PAIR)).set_index("model_id")
    assert dict(table.result) == {f"{ORG}/tiny-sd": "PASS", f"{ORG}/tiny-sd3": "PASS", f"{ORG}/tiny-sd-vae-attention": "PASS",
                                  f"{ORG}/tiny-sd-gated": "EXCLUDED", f"{ORG}/tiny-sd-custom-unet": "EXCLUDED"}, table[["result", "notes"]]
    assert dict(table.exclusion.dropna()) == {f"{ORG}/tiny-sd-gated": "gated", f"{ORG}/tiny-sd-custom-unet": "trust-remote-code"}
    assert "unet (my_unet.MyUNet2DConditionModel)" in table.loc[f"{ORG}/tiny-sd-custom-unet", "notes"]
    for name, denoiser in (("tiny-sd", "UNet2DConditionModel"), ("tiny-sd3", "SD3Transformer2DModel"), ("tiny-sd-vae-attention", "UNet2DConditionModel")):
        row, folder = table.loc[f"{ORG}/{name}"], run_folder(out, DF_PAIR, f"{ORG}/{name}")
        assert (row.cpu_match, row.runner, row.neuron_cores, row.check, row.graphs) == ("Y", "run_text_to_image", 1, "cpu", 2), row
        assert row.notes.startswith("'A red fox in the snow, watercolor', 2 steps, 64x64 px: PSNR "), row.notes
        for picture in ("image.png", "image_cpu.png"):
            with Image.open(folder / picture) as im: assert (im.format, im.size, im.mode) == ("PNG", (64, 64), "RGB")
        with Image.open(folder / "image.png") as im: assert len(im.getcolors(64 * 64)) > 100   # a picture, not a flat fill
        nb = json.loads((folder / "run.ipynb").read_text())
        shown = [o for c in nb["cells"] for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
        assert len(shown) == 1, "the notebook shows the two pictures side by side, once"
        run_py = (folder / "run.py").read_text()
        assert f"# pip install diffusers=={DF.library_version}\n" in run_py and f"runner run_text_to_image ({'StableDiffusion3Pipeline' if name == 'tiny-sd3' else 'StableDiffusionPipeline'!r})" in run_py
        assert json.loads((folder / "outcome.json").read_text())["images"] == ["image.png", "image_cpu.png"]
        assert denoiser in (folder / "run.ipynb").read_text()
    # publish uploads the pictures beside the notebooks
    files = dataset_files(out, "org/name")
    assert f"runs/{DF_PAIR}/{ORG}--tiny-sd/image.png" in files and f"runs/{DF_PAIR}/{ORG}--tiny-sd3/image_cpu.png" in files
    assert "### diffusers" in files["README.md"].decode()
    # run.py stands alone: copied elsewhere and run from yet another folder, it draws the same verdict and saves its pictures beside itself
    from neuron_support.hub import hub_env
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(run_folder(out, DF_PAIR, f"{ORG}/tiny-sd3") / "run.py", alone / "run.py")
    again = subprocess.run([sys.executable, str(alone / "run.py")], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                           env={**os.environ, **hub_env(demo_hub, tmp_path / "hf")})
    outcome = json.loads(again.stdout.strip().splitlines()[-1])
    assert (outcome["result"], outcome["cpu_match"]) == ("PASS", "Y"), again.stderr[-2000:]
    assert (alone / "image.png").is_file() and (alone / "image_cpu.png").is_file()
    assert "picture of 64x64 px drawn: compiled 2 graph(s)" in again.stderr


def test_the_picture_check_fails_on_damaged_weights(tmp_path):
    "The test hook `perturb` damages the denoiser's weights on the device: the picture falls far below bf16's PSNR, the row says N."
    outcome, run_py = damaged_run(build_demo() / "models" / ORG / "tiny-sd3", DF, tmp_path)
    assert outcome["result"] == "FAIL(output)" and outcome["check"] == "cpu", outcome
    assert outcome["cpu_match"].startswith("N PSNR "), outcome["cpu_match"]
    assert "'perturb': 'noise'" in run_py
    assert (tmp_path / "run" / "image.png").is_file()   # the wrong picture is kept, for a person to look at
