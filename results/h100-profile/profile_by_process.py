"""Samples of a `py-spy record --subprocesses -f raw` profile by kind of process of a `ptxconf run`: each kind's
seconds, the functions that were running (self), and for kinds named after the rate, where they were (cumulative).

    python3 profile_by_process.py spy.txt RATE [KIND ...]
"""

import collections
import re
import sys


def short(frame: str) -> str:
    """``function dir/file`` of a py-spy frame ``function (path:line)``."""
    m = re.match(r"(.*) \((.*):(\d+)\)", frame)
    return (m.group(1) + " " + "/".join(m.group(2).split("/")[-2:])) if m else frame


def kind_of(body: list[str]) -> str:
    """The kind of process a stack ran in, from the frames it holds."""
    s = " ".join(body)
    if "_cuda_worker" in s:
        return "gpu_worker"
    if "_compare run/planpool.py" in s:
        return "compare_worker"
    if "_plan run/planpool.py" in s:
        return "plan_worker"
    if "_lane " in s or "lanes.py" in s:
        return "lane"
    return "other"


def main(path: str, rate: float, detail: list[str]) -> None:
    kinds: collections.Counter = collections.Counter()
    leaf: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    cum: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for line in open(path):
        line = line.rstrip()
        if not line:
            continue
        stack, n = line.rsplit(" ", 1)
        body = [short(x) for x in stack.split(";") if not x.startswith("process ")]
        kind = kind_of(body)
        kinds[kind] += int(n)
        leaf[kind][body[-1] if body else "?"] += int(n)
        for frame in set(body):
            cum[kind][frame] += int(n)
    for kind, n in kinds.most_common():
        print(f"== {kind} {n / rate:.2f}s")
        for frame, m in leaf[kind].most_common(12):
            print(f"    self {m / rate:.2f} {frame}")
        if kind in detail:
            for frame, m in cum[kind].most_common(40):
                print(f"    cum {m / rate:.2f} {frame}")


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3:])
