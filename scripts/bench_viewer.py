"""Time and size of the episode viewer and of the export for a results folder (BENCHMARKS.md, "Viewer and export").

    python scripts/bench_viewer.py RESULTS_DIR [--repeats 3]

Prints, as medians over the repeats: the time to load the folder as the report does, to
write the viewer (memrl_bench/report/viewer.py) and the whole report with it; the size of
the viewer's files and of the rest of the report; the time to export every episode
(memrl_bench.export) and every retrieval, and the size of the Parquet and CSV files.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from memrl_bench import export
from memrl_bench.report import write_report
from memrl_bench.report.load import load
from memrl_bench.report.viewer import write_viewer


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def timed(times: list[float], work, *args):
    """work(*args), its wall time appended to `times`."""
    start = time.perf_counter()
    result = work(*args)
    times.append(time.perf_counter() - start)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench_viewer_"))
    times: dict[str, list[float]] = {k: [] for k in ("load", "viewer", "report with viewer", "read runs (export)", "episodes table", "retrievals table", "write episodes", "write retrievals")}
    try:
        for repeat in range(args.repeats):
            results = timed(times["load"], load, args.results_dir)
            timed(times["viewer"], write_viewer, results, scratch / f"viewer{repeat}")
            report_dir = scratch / f"report{repeat}"
            timed(times["report with viewer"], write_report, results, report_dir)
            runs = timed(times["read runs (export)"], export.read_runs, args.results_dir)
            frames = {"episodes": timed(times["episodes table"], export.episodes_frame, runs), "retrievals": timed(times["retrievals table"], export.retrievals_frame, runs)}
            out = scratch / f"export{repeat}"
            for name, frame in frames.items():
                timed(times[f"write {name}"], export.write_table, frame, out, name)
        n_runs, n_episodes = len(results.runs), sum(len(r.episodes) for _, r in runs)
        print(f"{args.results_dir}: {n_runs} runs, {n_episodes} logged episodes, {len(frames['retrievals'])} retrievals; medians of {args.repeats}")
        for name, values in times.items():
            print(f"  {name:22s} {statistics.median(values):8.2f} s")
        viewer_bytes = folder_bytes(report_dir / "episodes")
        print(f"  viewer files           {viewer_bytes / 1e6:8.2f} MB ({viewer_bytes / n_episodes:.0f} bytes per episode; largest run page data {max(p.stat().st_size for p in (report_dir / 'episodes' / 'data').iterdir()) / 1e3:.0f} kB)")
        print(f"  rest of the report     {(folder_bytes(report_dir) - viewer_bytes) / 1e6:8.2f} MB")
        print(f"  episode logs           {sum((Path(p) / 'episodes.jsonl').stat().st_size for p in results.runs['path']) / 1e6:8.2f} MB")
        for name in ("episodes.parquet", "episodes.csv", "retrievals.parquet", "retrievals.csv"):
            print(f"  {name:22s} {(out / name).stat().st_size / 1e6:8.2f} MB")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
