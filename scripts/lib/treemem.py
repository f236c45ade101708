"""The whole process tree's memory, for scripts/bench and scripts/bench-run.

tree_memory(cmd) starts cmd (a command that then sleeps: the set-up's peaks
are behind it when it is sampled), and 0.4 s later sums every process's peak
resident set (VmHWM) and proportional set size (Pss) over the tree. VmHWM
counts the pages of a binary shared by two processes (sandboxd and its
re-executed init) in each; Pss divides shared pages among their users.
Returns (Σ VmHWM MiB, Σ Pss MiB, processes seen); a command that fails or
leaves fewer than two processes is an error.
"""
import os
import subprocess
import time


def _status(pid, key):
    try:
        path = f"/proc/{pid}/status" if key == "VmHWM:" else f"/proc/{pid}/smaps_rollup"
        for line in open(path):
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _tree(pid):
    out = [pid]
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            for c in open(f"/proc/{pid}/task/{t}/children").read().split():
                out += _tree(int(c))
    except OSError:
        pass
    return out


def tree_memory(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.4)
    pids = _tree(p.pid)
    hwm = sum(_status(x, "VmHWM:") for x in pids)
    pss = sum(_status(x, "Pss:") for x in pids)
    if p.wait(timeout=30) != 0 or len(pids) < 2:
        raise SystemExit(f"tree_memory: {cmd}: exit {p.returncode}, {len(pids)} processes seen")
    return hwm, pss, len(pids)
