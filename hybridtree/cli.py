"""Command line: ``hybridtree devices`` (more commands arrive with the driver)."""

from __future__ import annotations

import argparse
import sys


def _devices(args: argparse.Namespace) -> int:
    from .opencl import choose_device, list_devices

    devices = list_devices()
    if not devices:
        print("no OpenCL device found (pip install pocl-binary-distribution gives a CPU one)",
              file=sys.stderr)
        return 2
    chosen = choose_device(args.device)
    for d in devices:
        mark = "*" if d == chosen else " "
        print(f"{mark} {d.label}  [{d.version}]")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hybridtree", description="hybridtree N-body code")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("devices", help="list OpenCL devices (* = the one chosen)")
    p.add_argument("--device", default=None, help="device choice to resolve")
    p.set_defaults(func=_devices)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except Exception as exc:  # user-facing: one clear line, exit 2
        if args.debug:
            raise
        print(f"hybridtree: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
