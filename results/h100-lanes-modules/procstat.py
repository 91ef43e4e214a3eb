"""Run a command; every 50 ms read /proc for its process tree: CPU (user, sys) per process, grouped by role."""
import collections
import json
import os
import subprocess
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def snapshot():
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:200]
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        ppid, utime, stime, start = int(rest[1]), int(rest[11]), int(rest[12]), int(rest[19])
        comm = st[st.index("(") + 1:st.rindex(")")]
        out[(int(d), start)] = (ppid, utime, stime, comm, cmd)
    return out


def main():
    cmd = sys.argv[2:]
    out_json = sys.argv[1]
    seen = {}
    p = subprocess.Popen(cmd)
    root = p.pid
    while p.poll() is None:
        for key, val in snapshot().items():
            seen[key] = val
        time.sleep(0.05)
    # the tree under root
    kids = collections.defaultdict(list)
    for (pid, start), (ppid, *_rest) in seen.items():
        kids[ppid].append((pid, start))
    tree, todo = {}, [k for k in seen if k[0] == root]
    depth = {k: 0 for k in todo}
    while todo:
        k = todo.pop()
        tree[k] = seen[k]
        for c in kids[k[0]]:
            if c not in tree and c[1] >= k[1]:
                depth[c] = depth[k] + 1
                todo.append(c)
    roles = collections.defaultdict(lambda: [0, 0, 0])
    rows = []
    for k, (ppid, ut, stt, comm, cmdline) in tree.items():
        d = depth[k]
        if "ptxas" in comm:
            role = "ptxas"
        elif "spawn_main" in cmdline or "multiprocessing.spawn" in cmdline:
            role = "gpu worker (spawned)"
        elif d == 0:
            role = "run process"
        else:
            role = f"forked, depth {d}"
        r = roles[role]
        r[0] += ut / HZ
        r[1] += stt / HZ
        r[2] += 1
        rows.append((k[0], ppid, d, comm, round(ut / HZ, 2), round(stt / HZ, 2)))
    doc = {"command": cmd, "exit": p.returncode,
           "by_role": {k: {"user_s": round(v[0], 2), "sys_s": round(v[1], 2), "processes": v[2]} for k, v in roles.items()},
           "processes": sorted(rows)}
    json.dump(doc, open(out_json, "w"), indent=1)
    for k, v in sorted(doc["by_role"].items()):
        print(f"{k:24s} user {v['user_s']:7.2f}  sys {v['sys_s']:6.2f}  processes {v['processes']}")
    sys.exit(p.returncode)


main()
