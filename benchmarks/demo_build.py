"""Time and size of the demo catalog build (issue 3: under 2 minutes, under 1 GB).

    python benchmarks/demo_build.py [DIR]

Builds into DIR (default: a fresh temporary folder) from scratch, then again (a no-op), and prints
the wall time of each, the disk size of the catalog and the time of each repo.
"""
import shutil, sys, tempfile, time
from pathlib import Path

from neuron_support.demo import build_demo, demo_repos

def disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())

def timed(repos):
    "Wrap each repo's save so that its time is recorded."
    times = {}
    for r in repos:
        def save(dest, catalog, _save=r.save, _id=r.id):
            t = time.perf_counter(); _save(dest, catalog); times[_id] = time.perf_counter() - t
        r.save = save
    return repos, times

if __name__ == "__main__":
    dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "demo"
    shutil.rmtree(dir, ignore_errors=True)
    t = time.perf_counter(); repos, times = timed(demo_repos()); listing_s = time.perf_counter() - t
    t = time.perf_counter(); build_demo(dir, repos); first = time.perf_counter() - t
    t = time.perf_counter(); build_demo(dir); second = time.perf_counter() - t
    print(f"catalog: {dir}")
    print(f"first build: {first + listing_s:.1f} s (repo list {listing_s:.1f} s)")
    print(f"second build (no-op): {second:.3f} s")
    print(f"disk: {disk_bytes(dir) / 2**20:.1f} MiB")
    for id, s in sorted(times.items(), key=lambda kv: -kv[1]): print(f"  {s:6.2f} s  {id}")
