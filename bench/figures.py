"""The figures `make bench` keeps, and their comparison with the committed ones.

Each benchmark script calls record(); bench/run-all sets KGS_BENCH_FIGURES to
a JSON-lines file (bench/out/figures.jsonl) and, at the end, compares it with
bench/figures.json, the figures of the last committed run:

  python3 bench/figures.py compare bench/figures.json bench/out/figures.jsonl
  python3 bench/figures.py update  bench/figures.json bench/out/figures.jsonl

A figure is a regression when it moved the wrong way by more than its noise
(a fraction: 0.10 = 10 %). Memory and instruction counts repeat closely;
latencies and CPU on a shared machine do not, so they carry a wider noise,
and ratios against a baseline run side by side are kept beside them because
they travel between machines better than absolute times.
"""
import json
import os
import sys


def record(name, value, unit, better="lower", noise=0.10):
    """Appends one figure to $KGS_BENCH_FIGURES (nothing when it is unset)."""
    path = os.environ.get("KGS_BENCH_FIGURES")
    if not path or value is None:
        return
    if better not in ("lower", "higher"):
        raise ValueError("better must be lower or higher, not %r" % better)
    with open(path, "a") as f:
        f.write(json.dumps({"name": name, "value": float(value), "unit": unit,
                            "better": better, "noise": noise}) + "\n")


def load_run(path):
    figs = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                figs[d["name"]] = d
    return figs


def compare(committed, now):
    """Rows (name, committed, now, ratio, verdict) and the regression count."""
    rows, regressions = [], 0
    for name, fig in now.items():
        old = committed.get(name)
        if old is None:
            rows.append((name, None, fig, None, "new"))
            continue
        a, b = old["value"], fig["value"]
        ratio = b / a if a else None
        noise = max(old.get("noise", 0.1), fig.get("noise", 0.1))
        if a == b:
            verdict = "same"
        elif ratio is None:
            verdict = "worse" if (b > a) == (fig["better"] == "lower") else "better"
        elif fig["better"] == "lower":
            verdict = "WORSE" if ratio > 1 + noise else "better" if ratio < 1 - noise else "noise"
        else:
            verdict = "WORSE" if ratio < 1 - noise else "better" if ratio > 1 + noise else "noise"
        regressions += verdict in ("WORSE", "worse")
        rows.append((name, old, fig, ratio, verdict))
    for name in committed:
        if name not in now:
            rows.append((name, committed[name], None, None, "not measured"))
    return rows, regressions


def print_comparison(rows, regressions, committed_path):
    print("== figures against the last committed run (%s)" % committed_path)
    print("%-52s %12s %12s %7s  %s" % ("figure", "committed", "now", "ratio", "verdict (noise)"))
    for name, old, fig, ratio, verdict in rows:
        unit = (fig or old)["unit"]
        noise = (fig or old).get("noise", 0.1)
        print("%-52s %12s %12s %7s  %s (%d %%)" % (
            "%s (%s)" % (name, unit), "-" if old is None else "%.4g" % old["value"],
            "-" if fig is None else "%.4g" % fig["value"],
            "-" if ratio is None else "%.2f" % ratio, verdict, round(noise * 100)))
    if regressions:
        print("%d figure(s) WORSE beyond noise: find the change, or, if it is the price of a "
              "feature, say so and commit the new figures (bench/README.md)" % regressions)
    else:
        print("no figure worse beyond noise")


def main(argv):
    if len(argv) != 4 or argv[1] not in ("compare", "update"):
        sys.exit("usage: figures.py compare|update COMMITTED.json RUN.jsonl")
    _, cmd, committed_path, run_path = argv
    now = load_run(run_path)
    if cmd == "update":
        with open(committed_path, "w") as f:
            json.dump({k: now[k] for k in sorted(now)}, f, indent=1, sort_keys=True)
            f.write("\n")
        print("%d figures written to %s" % (len(now), committed_path))
        return 0
    committed = {}
    if os.path.exists(committed_path):
        with open(committed_path) as f:
            committed = json.load(f)
    rows, regressions = compare(committed, now)
    print_comparison(rows, regressions, committed_path)
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
