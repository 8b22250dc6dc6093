#!/usr/bin/python3
"""torch_compare.py A B: exit 0 when the final states torch_ddp_trainer.py saved in A and B are
bitwise identical (torch.equal on every tensor of the model's state dict and of the optimizer's
state), else print each tensor that differs, with its largest difference, and exit 1."""

import sys

import torch


def tensors(prefix, value):
    """(name, tensor) for every tensor in a nested state dict."""
    if isinstance(value, torch.Tensor):
        yield prefix, value
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            yield from tensors(f"{prefix}.{key}", value[key])
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from tensors(f"{prefix}[{i}]", item)


def main() -> int:
    a, b = (dict(tensors("", torch.load(path))) for path in sys.argv[1:3])
    if a.keys() != b.keys():
        print(f"different tensors: {sorted(a.keys() ^ b.keys())}")
        return 1
    differ = [name for name in a if not torch.equal(a[name], b[name])]
    for name in differ:
        print(f"{name}: differs, largest difference {(a[name].double() - b[name].double()).abs().max().item():.3g}")
    print(f"{len(a) - len(differ)} of {len(a)} tensors bitwise equal")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
