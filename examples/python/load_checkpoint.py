"""Load a safetensors checkpoint straight into GPU memory with fgds.

    python3 load_checkpoint.py model.safetensors [cuda|cuda:1|cpu]

fgds.torch.load_file is safetensors.torch.load_file's drop-in: the same
call, the same {name: tensor} result. On CUDA the bytes go from the file
into each tensor's memory through libfgds (O_DIRECT or the page cache,
then the GPU), all tensors in flight at once, with no pageable host copy.
Put fgds on the path first: PYTHONPATH=/usr/local/lib/fgds/python, or
deploy/setup.sh does it for the system python3.
"""

import sys
import time

import torch

import fgds.torch


def main():
    path = sys.argv[1]
    device = sys.argv[2] if len(sys.argv) > 2 else (
        "cuda" if torch.cuda.is_available() else "cpu")
    start = time.perf_counter()
    state_dict = fgds.torch.load_file(path, device=device)
    seconds = time.perf_counter() - start
    nbytes = sum(t.numel() * t.element_size() for t in state_dict.values())
    print(f"{len(state_dict)} tensors, {nbytes / 1e9:.3f} GB onto {device} "
          f"in {seconds:.3f} s ({nbytes / 1e9 / seconds:.2f} GB/s)")
    # A model takes them as usual: model.load_state_dict(state_dict).
    for name, tensor in list(state_dict.items())[:5]:
        print(f"  {name}: {tuple(tensor.shape)} {tensor.dtype}")


if __name__ == "__main__":
    main()
