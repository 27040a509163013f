#!/usr/bin/env python3
"""chash benchmark: per-row cost of each function as a ratio to a builtin.

Every case is `SELECT sum(<expression>) FROM <table>` (the expression must be
an integer; wrap a text result in octet_length(), which reads only the
header, where length() would count characters) over the same rows, run
in one session with parallel workers and JIT off.  Cases run round-robin,
RUNS times each, and we keep each case's median execution time
(EXPLAIN ANALYZE, TIMING OFF).  Two ratios are printed against the case's
baseline, measured in the same run:

  query  = median(case) / median(baseline)            (whole query)
  net    = (median(case) - median(scan)) / (median(baseline) - median(scan))

where `scan` is `SELECT sum(octet_length(k)) FROM <table>`: reading the rows
and the aggregate, with a near-free function in the expression's place.
Targets are checked against `query`, the per-row cost of the whole query as
the issues define it; `net` is printed beside it as the stricter view of the
function's own cost.

Every table must have a text column k.  Cases live in bench/cases/*.txt,
one per line:
    name | table | expression | baseline name | target query ratio
and bench/setup/*.sql run first (in name order) to build the tables.
"""
import glob
import json
import os
import statistics
import subprocess
import sys

RUNS = int(os.environ.get("BENCH_RUNS", "7"))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def psql(sql):
    out = subprocess.run(
        ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
        check=True, capture_output=True, text=True)
    return out.stdout


def load_cases():
    cases = []
    for path in sorted(glob.glob(os.path.join(ROOT, "bench", "cases", "*.txt"))):
        for line in open(path):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = [p.strip() for p in line.split("|")]
            if len(parts) != 5:
                sys.exit(f"{path}: bad line: {line}")
            name, table, expr, base, target = parts
            cases.append(dict(name=name, table=table, expr=expr,
                              base=base or None,
                              target=float(target) if target else None))
    return cases


def timed(sql):
    """Execution time in ms of one run of sql."""
    plan = psql("SET max_parallel_workers_per_gather = 0; SET jit = off; "
                "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, FORMAT JSON) " + sql)
    return json.loads(plan)[0]["Execution Time"]


def main():
    only = set(sys.argv[1:])
    psql("CREATE EXTENSION IF NOT EXISTS chash")
    for path in sorted(glob.glob(os.path.join(ROOT, "bench", "setup", "*.sql"))):
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", path],
                       check=True, stdout=subprocess.DEVNULL)
    psql("VACUUM ANALYZE")
    cases = load_cases()
    if only:
        wanted = set(only)
        for c in cases:
            if c["name"] in only and c["base"]:
                wanted.add(c["base"])
        cases = [c for c in cases if c["name"] in wanted]
    tables = sorted({c["table"] for c in cases})
    scans = {t: f"SELECT sum(octet_length(k)) FROM {t}" for t in tables}
    rows = {t: int(psql(f"SELECT count(*) FROM {t}")) for t in tables}

    times = {c["name"]: [] for c in cases}
    scan_times = {t: [] for t in tables}
    for c in cases:                      # warm-up: caches, catalog, pages
        timed(f"SELECT sum({c['expr']}) FROM {c['table']}")
    for _ in range(RUNS):
        for t in tables:
            scan_times[t].append(timed(scans[t]))
        for c in cases:
            times[c["name"]].append(
                timed(f"SELECT sum({c['expr']}) FROM {c['table']}"))

    med = {n: statistics.median(v) for n, v in times.items()}
    scan = {t: statistics.median(v) for t, v in scan_times.items()}
    by_name = {c["name"]: c for c in cases}
    print(f"{'case':<34} {'rows':>9} {'ns/row':>8} {'net ns':>8} "
          f"{'baseline':<22} {'query':>6} {'net':>6} {'target':>7}")
    failures = 0
    for c in cases:
        n, t = c["name"], c["table"]
        per_row = med[n] * 1e6 / rows[t]
        net_row = (med[n] - scan[t]) * 1e6 / rows[t]
        line = f"{n:<34} {rows[t]:>9} {per_row:>8.1f} {net_row:>8.1f} "
        if c["base"]:
            b = by_name[c["base"]]
            q = med[n] / med[c["base"]]
            net = (med[n] - scan[t]) / (med[c["base"]] - scan[b["table"]])
            verdict = ""
            if c["target"] is not None:
                ok = q <= c["target"]
                failures += 0 if ok else 1
                verdict = f"{c['target']:>5.2f} {'ok' if ok else 'MISSED'}"
            line += f"{c['base']:<22} {q:>6.2f} {net:>6.2f} {verdict}"
        print(line, flush=True)
    print(f"(median of {RUNS} runs; targets apply to 'query'; 'net' subtracts the scan)")
    print(f"bench: {sum(1 for c in cases if c['target'] is not None) - failures} targets met, "
          f"{failures} missed")


if __name__ == "__main__":
    main()
