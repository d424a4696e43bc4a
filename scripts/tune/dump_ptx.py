#!/usr/bin/env python
"""Write the device's compiled form of a kernel (PTX on NVIDIA) and count its opcodes
(a tuning aid, not a test).

    PYTHONPATH=. python scripts/tune/dump_ptx.py --device nvidia --source direct.cl \\
        --define WG=512 NI=2 SPLIT=0 ZERO_GUARD=0 --out direct.ptx
"""

from __future__ import annotations

import argparse
import collections
import re

from hybridtree.device.choice import get_runtime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--source", default="direct.cl")
    p.add_argument("--define", nargs="*", default=[], metavar="KEY=VALUE")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    rt = get_runtime(args.device)
    defines = dict(d.split("=", 1) for d in args.define)
    prg = rt.program(args.source, defines)
    binary = prg.binaries[0]
    with open(args.out, "wb") as f:
        f.write(binary)
    text = binary.decode("latin-1")
    ops = collections.Counter(m.group(1) for m in
                              re.finditer(r"^\s+(?:@%p\d+\s+)?([a-z][\w.]*)", text, re.M))
    print(f"# {rt.info.label}: {args.source} {defines}, {len(binary)} bytes -> {args.out}")
    for op, n in ops.most_common(40):
        print(f"{n:6d} {op}")


if __name__ == "__main__":
    main()
