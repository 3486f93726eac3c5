"""The floor of a RADOS pool: what `rados bench` (the OSD's own client, doing nothing else)
writes, then reads back in order and at random, at one object size, with the CPU the OSDs and
the tool spent per GB. Used by bench/rados_vs_rgw.py (experiment 9)."""
import re
import resource

import common

KiB = 1024
MiB = 1024 * KiB


def size_name(n):
    return f"{n // MiB} MiB" if n >= MiB else f"{n // KiB} KiB"


def parse(text):
    """The summary of `rados bench ... write|seq|rand` (its MB are MiB)."""
    def field(label):
        m = re.search(rf"^{re.escape(label)}:\s+([\d.e+-]+)", text, re.M)
        return float(m.group(1)) if m else None
    mib_s = field("Bandwidth (MB/sec)") or 0.0
    return {"gbps": mib_s * MiB / 1e9, "iops": field("Average IOPS") or 0.0,
            "total_s": field("Total time run"),
            "ops": field("Total reads made") or field("Total writes made"),
            "avg_latency_ms": (field("Average Latency(s)") or 0) * 1e3,
            "max_latency_ms": (field("Max latency(s)") or 0) * 1e3}


def measure(run, say, conf, pool, osd_pids, size, count, seconds, concurrency):
    """Rows for write (at most `count` new objects of `size` bytes), seq and rand (reading
    them back), `concurrency` ops in flight, each `seconds` long; the objects are removed
    after. `run(cmd, name, timeout=, record=)` runs a command and returns its output."""
    run_name = f"rvr-floor-{size}"
    base = ["rados", "-c", conf, "-p", pool]
    rows = []
    for mode in ("write", "seq", "rand"):
        args = (["write", "-b", str(size), "-t", str(concurrency), "--no-cleanup",
                 "--max-objects", str(count)] if mode == "write"
                else [mode, "-t", str(concurrency)])
        osd0 = sum(common.cpu_seconds(p) for p in osd_pids)
        self_0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = run(base + ["bench", str(seconds), *args, "--run-name", run_name],
                  f"floor-{mode}-{size}", timeout=600)
        self_1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        row = parse(out)
        cpu = {"ceph-osd": sum(common.cpu_seconds(p) for p in osd_pids) - osd0,
               "client": (self_1.ru_utime + self_1.ru_stime) -
                         (self_0.ru_utime + self_0.ru_stime)}
        moved = (row["ops"] or 0) * size / 1e9
        row.update({"op_bytes": size, "mode": mode, "concurrency": concurrency, "cpu_s": cpu,
                    "cpu_s_per_gb": {n: v / moved for n, v in cpu.items()} if moved else {}})
        rows.append(row)
        say(f"  rados bench {mode} {size_name(size)}: {row['gbps']:.3f} GB/s, "
            f"{row['iops']:.0f} ops/s")
    run(base + ["cleanup", "--run-name", run_name], f"floor-cleanup-{size}", timeout=600,
        record=False)
    return rows
