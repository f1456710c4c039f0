#!/usr/bin/env python3
"""The tables of tests/device/usrbio_bench.sh (and tests/bench/usrbio_ratio.sh).

Usage: usrbio_bench_table.py OUT_DIR SIDE...
Reads OUT_DIR/usrbio-<case>-<side>.json (`fgds bench --json`) and prints,
as Markdown:
  1. 4 KiB random page-cached reads per client count: IOPS of native pread,
     POSIX through the mount and usrbio on each side (daemon), usrbio's
     ratio to native, and the daemon's CPU per entry;
  2. where an entry's time goes on the ring path (the daemon's ring.*
     counters over the timed phase, per entry), for the sides that have them;
  3. cold 4 KiB random and 1 MiB sequential rows with their ratios;
  4. issue 17's targets, each MET or MISSED with the numbers.
"""
import json
import os
import re
import sys


def load(out, case, side):
    try:
        with open(os.path.join(out, f"usrbio-{case}-{side}.json")) as f:
            return json.load(f)["rows"]
    except (OSError, ValueError, KeyError):
        return []


def row(rows, mode, op="read", cache=None):
    for r in rows:
        if r["mode"] == mode and r["op"] == op and (
                cache is None or r["cache_wanted"] == cache):
            return r
    return None


def miops(r):
    return f"{r['iops'] / 1e6:.2f}M" if r and r.get("iops") else "-"


def ns(value):
    return f"{value:.0f}" if value is not None else "-"


def main():
    out, sides = sys.argv[1], sys.argv[2:]
    cases = sorted({m.group(1) for f in os.listdir(out)
                    if (m := re.match(r"usrbio-(.+)-([a-z]+)\.json$", f))})
    rand = sorted((c for c in cases if re.match(r"rand4k-t\d+$", c)),
                  key=lambda c: int(c.split("-t")[1]))
    targets = []

    print("### 4 KiB random page-cached reads, qd 32 per client (IOPS)\n")
    head = ["clients", "native pread", "posix (mount)"]
    for side in sides:
        head += [f"usrbio {side}", f"{side}/native",
                 f"daemon ns/entry {side} (ring/io)"]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    results = {}
    for case in rand:
        t = int(case.split("-t")[1])
        after_rows = load(out, case, "after")
        native = row(after_rows, "native", cache="warm")
        posix = row(after_rows, "posix", cache="warm")
        cells = [str(t), miops(native), miops(posix)]
        for side in sides:
            u = row(load(out, case, side), "usrbio", cache="warm")
            results[(t, side)] = u
            ratio = (u["iops"] / native["iops"]
                     if u and native and native["iops"] else None)
            cpu = u.get("daemon_cpu_ns_per_op") if u else None
            split = (f" ({ns(u.get('daemon_ring_ns_per_op'))}/"
                     f"{ns(u.get('daemon_io_ns_per_op'))})" if cpu else "")
            cells += [miops(u), f"{ratio:.2f}x" if ratio else "-",
                      ns(cpu) + split]
        results[(t, "native")] = native
        print("| " + " | ".join(cells) + " |")

    print("\n### Where a usrbio entry's time goes (daemon ring path, per "
          "entry, timed read phase)\n")
    head = ["side", "clients", "entries/batch", "inline", "take ns",
            "submit ns", "post ns", "notify ns", "notifies/100",
            "wakeups/100", "helped", "engine latency us"]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for side in sides:
        for case in rand:
            u = row(load(out, case, side), "usrbio", cache="warm")
            st = (u or {}).get("ring_stages") or {}
            e = st.get("entries", 0)
            if not e:
                continue
            per = lambda k: st.get(k, 0) / e
            samples = st.get("engine_samples", 0)
            lat = (f"{st['engine_ns'] / samples / 1e3:.1f}"
                   if samples else "-")
            print(f"| {side} | {case.split('-t')[1]} | "
                  f"{e / max(st.get('batches', 1), 1):.1f} | "
                  f"{100 * per('inline'):.0f}% | {per('take_ns'):.0f} | "
                  f"{per('submit_ns'):.0f} | {per('post_ns'):.0f} | "
                  f"{per('notify_ns'):.0f} | {100 * per('notifies'):.1f} | "
                  f"{100 * per('wakeups'):.1f} | "
                  f"{100 * per('helped'):.0f}% | {lat} |")

    print("\n### Cold 4 KiB random and 1 MiB sequential\n")
    print("| case | side | mode | cache | GB/s | IOPS | ratio | baseline |"
          " daemon ns/op |")
    print("|" + " --- |" * 9)
    for case in (c for c in cases if c not in rand):
        for side in sides:
            for r in load(out, case, side):
                if r["op"] != "read":
                    continue
                ratio = f"{r['ratio']:.2f}x" if r.get("ratio") else "-"
                print(f"| {case} | {side} | {r['mode']} | {r['cache']} | "
                      f"{r['gb_per_s']:.2f} | {miops(r)} | {ratio} | "
                      f"{r.get('baseline') or '-'} | "
                      f"{ns(r.get('daemon_cpu_ns_per_op'))} |")

    print("\n### Issue 17 targets (this run)\n")

    def target(name, ok, detail):
        state = "MET" if ok else ("MISSED" if ok is not None else "n/a")
        print(f"- {state}: {name}: {detail}")

    for t in (1, 2, 8, 16):
        u, n = results.get((t, "after")), results.get((t, "native"))
        if u and n and n["iops"]:
            want = 0.9 if t == 2 else 1.0
            target(f"usrbio >= {want}x native pread at {t} clients",
                   u["iops"] >= want * n["iops"],
                   f"{u['iops'] / n['iops']:.2f}x ({miops(u)} vs {miops(n)})")
    u = results.get((16, "after"))
    if u:
        target("usrbio >= 5M IOPS at 16 clients", u["iops"] >= 5e6, miops(u))
    if "before" in sides:
        for t in sorted({t for (t, s) in results if s == "before"}):
            b, a = results.get((t, "before")), results.get((t, "after"))
            bc = b and b.get("daemon_cpu_ns_per_op")
            ac = a and a.get("daemon_cpu_ns_per_op")
            if bc and ac:
                target(f"daemon CPU per entry at least halved ({t} clients)",
                       ac <= 0.5 * bc, f"{bc:.0f} -> {ac:.0f} ns ({ac / bc:.2f}x)")
    for r in load(out, "cold4k-t4", "after"):
        if r["op"] == "read" and r["mode"] in ("usrbio", "usrbio-direct") \
                and r.get("ratio"):
            target(f"cold 4 KiB random {r['mode']} at the disk's limit "
                   f"(>= 0.95x native-direct)", r["ratio"] >= 0.95,
                   f"{r['ratio']:.2f}x")
    for r in load(out, "seq1m-t8", "after"):
        if r["op"] == "read" and r["mode"] == "usrbio" and r.get("ratio"):
            target(f"1 MiB sequential, 8 clients, {r['cache']}: usrbio >= "
                   f"native", r["ratio"] >= 1.0, f"{r['ratio']:.2f}x")


if __name__ == "__main__":
    main()
