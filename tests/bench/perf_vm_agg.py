# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""perf_vm.sh's figures over several boots.

Usage: perf_vm_agg.py [--csv FILE] [--plot FILE] GUEST-OUTPUT...

Reads the "PERF-FIG kind stack size figure" and "PERF-CPU kind stack size
cpu-ms wall-ms" lines of each boot's guest output (perf_vm_guest.sh) and
prints, per cell, the median over boots with the lowest and highest, and
issue 15's aims for the kernel helper against the kernel's siw judged on
the medians: bandwidth at least siw's, latency at most siw's, and the
target's CPU at most siw's plus 10 %. --csv writes every boot's figures
and the medians; --plot writes a gnuplot script (rendered when FILE ends
in .svg or .png and gnuplot is installed).
"""
import os
import shutil
import statistics
import subprocess
import sys

STACKS = ["inprocess", "kernel", "siw", "rxe", "tcp"]
TESTS = {"bw": "ib_write_bw", "lat": "ib_read_lat", "wlat": "ib_write_lat"}
TITLES = {
    "bw": "ib_write_bw, BW average [MB/s], median (min-max) of %d boots",
    "lat": "ib_read_lat, t_typical [usec] (TCP: a round trip), "
           "median (min-max) of %d boots",
    "wlat": "ib_write_lat, t_typical [usec] (TCP: one way), "
            "median (min-max) of %d boots",
    "cpu-bw": "ib_write_bw, the target's CPU [ms], median (min-max)",
    "cpu-lat": "ib_read_lat, the target's CPU [ms], median (min-max)",
}


def parse(paths):
    figs, cpus = {}, {}
    for boot, path in enumerate(paths):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                w = line.split()
                if len(w) == 5 and w[0] == "PERF-FIG":
                    figs.setdefault((w[1], w[2], int(w[3])), []).append(
                        (boot, float(w[4])))
                elif len(w) == 6 and w[0] == "PERF-CPU" and w[4] != "-":
                    cpus.setdefault((w[1], w[2], int(w[3])), []).append(
                        (boot, float(w[4]), float(w[5])))
    return figs, cpus


def cell(vals):
    if not vals:
        return "-", None
    m = statistics.median(vals)
    if len(vals) == 1:
        return "%.2f" % m, m
    return "%.2f (%.2f-%.2f)" % (m, min(vals), max(vals)), m


def verdict(k, s, aim):
    if k is None or s is None:
        return "-"
    ok = {"ge": k >= s, "le": k <= s, "cpu": k <= 1.1 * s}[aim]
    return "met" if ok else "not met"


def table(title, data, kind, aim, idx=1):
    sizes = sorted({k[2] for k in data if k[0] == kind})
    if not sizes:
        return []
    print(title)
    print("%10s" % "size" + "".join(" %22s" % s for s in STACKS) +
          "  aim: kernel helper %s siw" %
          {"ge": ">=", "le": "<=", "cpu": "<= 1.1x"}[aim])
    rows = []
    for size in sizes:
        med = {}
        line = "%10d" % size
        for st in STACKS:
            vals = [v[idx] for v in data.get((kind, st, size), [])]
            text, med[st] = cell(vals)
            line += " %22s" % text
        v = verdict(med["kernel"], med["siw"], aim)
        print(line + "  " + v)
        rows.append((size, med, v))
    print()
    return rows


def plot(path, rows_bw, rows_lat, boots):
    render = path.endswith((".svg", ".png"))
    script = path + ".gp" if render else path
    with open(script, "w", encoding="utf-8") as f:
        f.write("# perf_vm.sh: swiw's kernel helper beside the kernel's siw "
                "and rxe, QEMU TCG, medians of %d boots\n" % boots)
        if render:
            term = "pngcairo" if path.endswith(".png") else "svg"
            f.write("set terminal %s size 1200,450\nset output '%s'\n" %
                    (term, path))
        for name, rows in (("bw", rows_bw), ("lat", rows_lat)):
            f.write("$%s << EOD\n" % name)
            for size, med, _ in rows:
                f.write("%d %s\n" % (size, " ".join(
                    "-" if med[s] is None else "%g" % med[s] for s in STACKS)))
            f.write("EOD\n")
        f.write("set multiplot layout 1,2\nset logscale x 2\nset grid\n"
                "set key top left\nset datafile missing '-'\n"
                "set xlabel 'message size (bytes)'\n")
        for name, ylabel in (("bw", "ib_write_bw, MB/s"),
                             ("lat", "ib_read_lat t_typical, usec")):
            f.write("set ylabel '%s'\nset title '%s'\n" % (ylabel, ylabel))
            f.write("plot " + ", \\\n     ".join(
                "$%s using 1:%d with linespoints title '%s'" %
                (name, i + 2, s) for i, s in enumerate(STACKS)) + "\n")
        f.write("unset multiplot\n")
    if render and shutil.which("gnuplot"):
        subprocess.run(["gnuplot", script], check=True)
        print("plot written to %s (script %s)" % (path, script))
    elif render:
        print("gnuplot is not installed: wrote the script %s" % script)
    else:
        print("gnuplot script written to %s" % script)


def main():
    args, csv, plot_to = sys.argv[1:], None, None
    while args and args[0].startswith("--"):
        if args[0] == "--csv":
            csv = args[1]
        elif args[0] == "--plot":
            plot_to = args[1]
        else:
            sys.exit("perf_vm_agg: unknown option %s" % args[0])
        args = args[2:]
    paths = [p for p in args if os.path.getsize(p) > 0]
    figs, cpus = parse(paths)
    if not figs:
        sys.exit("perf_vm_agg: no PERF-FIG lines in %s" % " ".join(args))
    n = len(paths)
    rows_bw = table(TITLES["bw"] % n, figs, "bw", "ge")
    rows_lat = table(TITLES["lat"] % n, figs, "lat", "le")
    table(TITLES["wlat"] % n, figs, "wlat", "le")
    table(TITLES["cpu-bw"], cpus, "bw", "cpu")
    table(TITLES["cpu-lat"], cpus, "lat", "cpu")
    if csv:
        with open(csv, "w", encoding="utf-8") as f:
            f.write("test,stack,bytes,boot,figure,unit,target_cpu_ms,"
                    "target_wall_ms\n")
            for (kind, st, size), vals in sorted(figs.items()):
                cpu = {b: (c, w) for b, c, w in cpus.get((kind, st, size), [])}
                for boot, v in vals:
                    c, w = cpu.get(boot, ("", ""))
                    f.write("%s,%s,%d,%d,%g,%s,%s,%s\n" % (
                        TESTS[kind], st,
                        size, boot + 1, v, "MB/s" if kind == "bw" else "usec",
                        c, w))
        print("figures written to %s" % csv)
    if plot_to:
        plot(plot_to, rows_bw, rows_lat, n)


if __name__ == "__main__":
    main()
