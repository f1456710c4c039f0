// File: usrbio/direct/path.h
//
// Which GPU path the driver takes, and why not the direct one: the answer
// GDS users keep asking for ("am I on the direct path or the fallback?").
// The probe reads the machine; the choice is a pure function of it.
#ifndef FGDS_USRBIO_DIRECT_PATH_H_
#define FGDS_USRBIO_DIRECT_PATH_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace fgds::direct {

// What the machine offers for FGDS_GPU_PATH_DIRECT.
struct DirectProbe {
  bool dmabuf_supported = false;  // the GPU can export its memory
  std::string device_node;        // /dev/fgds_<bdf> for this GPU, or ""
  bool device_node_present = false;
};

struct PathChoice {
  uint32_t path = 0;           // FGDS_GPU_PATH_*
  std::string why_not_direct;  // empty when path is DIRECT
};

// ChoosePath picks FGDS_GPU_PATH_DIRECT only when everything it needs is
// there, else FGDS_GPU_PATH_BOUNCE with the first missing piece in words.
PathChoice ChoosePath(const DirectProbe& probe);

// ProbeDirect fills a DirectProbe for a GPU, looking for its device node
// (kmod::FgdsDeviceNode).
DirectProbe ProbeDirect(bool dmabuf_supported, std::string_view pci_bus_id);

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_PATH_H_
