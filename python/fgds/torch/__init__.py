"""fgds.torch: PyTorch on fgds.

  load_file(path, device="cpu")       safetensors file -> {name: tensor},
                                      straight into GPU memory on CUDA
  save_file(tensors, path, metadata)  {name: tensor} -> safetensors file
  GdsFile, gds_register_buffer,       torch.cuda.gds's API on libfgds
  gds_deregister_buffer

Drop-in for safetensors.torch.load_file/save_file and torch.cuda.gds:
change the import, keep the calls.
"""

from .gds_file import GdsFile, gds_deregister_buffer, gds_register_buffer
from .load import load_file
from .save import save_file

__all__ = ["GdsFile", "gds_deregister_buffer", "gds_register_buffer",
           "load_file", "save_file"]
