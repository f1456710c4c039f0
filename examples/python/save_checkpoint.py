"""Save a model's weights as a safetensors checkpoint with fgds.

    python3 save_checkpoint.py out.safetensors

fgds.torch.save_file is safetensors.torch.save_file's drop-in: CUDA
tensors are written from device memory through libfgds, CPU tensors with
pwritev; any safetensors reader loads the file.
"""

import sys

import torch

import fgds.torch


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096),
                                torch.nn.GELU(),
                                torch.nn.Linear(4096, 1024)).to(device)
    # save_file stores what it is given: detach from autograd first.
    state_dict = {name: t.detach() for name, t in model.state_dict().items()}
    fgds.torch.save_file(state_dict, sys.argv[1], metadata={"format": "pt"})
    restored = fgds.torch.load_file(sys.argv[1], device=device)
    assert all(torch.equal(restored[n], t) for n, t in state_dict.items())
    print(f"saved and checked {len(state_dict)} tensors to {sys.argv[1]}")


if __name__ == "__main__":
    main()
