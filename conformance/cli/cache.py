"""``ptxconf cache info|clear``: what the cache holds (compiled modules, ptxas verdicts, parsed specs) and deleting it.

Installed ptxas releases live beside the cache but are not part of it (``ptxconf toolchains`` manages them).
"""

from __future__ import annotations

import argparse

from ptxconf import cache

__all__ = ["add_parser"]


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def cmd_info(args: argparse.Namespace) -> int:
    u = cache.usage()
    print(f"cache {u.root}: {_size(u.total)} of at most {_size(u.bound)} ($PTXCONF_CACHE_MAX)")
    for kind, (entries, size) in u.kinds.items():
        print(f"  {kind:6s} {entries:6d} files {_size(size):>10s}  {cache.KINDS[kind]}")
    return 0


def cmd_clear(args: argparse.Namespace) -> int:
    files, size = cache.clear(args.kind)
    print(f"deleted {files} files, {_size(size)}, from {cache.cache_root()}{' (' + args.kind + ')' if args.kind else ''}")
    return 0


def add_parser(sub) -> None:
    cs = sub.group("cache", help="what the cache of compiled modules, ptxas verdicts and parsed specs holds; clear it")
    i = cs.add_parser("info", help="entries and bytes per kind, the root and the size bound")
    i.set_defaults(func=cmd_info)
    c = cs.add_parser("clear", help="delete the cache's entries (all kinds, or one)")
    c.add_argument("kind", nargs="?", choices=list(cache.KINDS), help="only this kind")
    c.set_defaults(func=cmd_clear)
