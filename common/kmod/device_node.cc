#include "common/kmod/device_node.h"

#include <cstdio>
#include <string>

namespace fgds::kmod {
namespace {

// ParseHex reads hex digits up to `stop` (or the end when stop is 0)
// starting at *pos; false when there are none or too many.
bool ParseHex(std::string_view text, size_t* pos, char stop, unsigned max,
              unsigned* value) {
  unsigned result = 0;
  size_t digits = 0;
  while (*pos < text.size() && text[*pos] != stop) {
    const char c = text[*pos];
    unsigned digit;
    if (c >= '0' && c <= '9') {
      digit = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<unsigned>(c - 'A' + 10);
    } else {
      return false;
    }
    result = result * 16 + digit;
    if (++digits > 4 || result > max) return false;
    ++*pos;
  }
  if (digits == 0) return false;
  if (stop != 0) {
    if (*pos == text.size()) return false;
    ++*pos;  // the separator
  }
  *value = result;
  return true;
}

}  // namespace

std::string FgdsDeviceNode(std::string_view pci_bus_id) {
  // domain:bus:device.function, hex, as cuDeviceGetPCIBusId writes it.
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  unsigned function = 0;
  size_t pos = 0;
  if (!ParseHex(pci_bus_id, &pos, ':', 0xffff, &domain) ||
      !ParseHex(pci_bus_id, &pos, ':', 0xff, &bus) ||
      !ParseHex(pci_bus_id, &pos, '.', 0x1f, &device) ||
      !ParseHex(pci_bus_id, &pos, 0, 7, &function) ||
      pos != pci_bus_id.size()) {
    return "";
  }
  char node[64];
  std::snprintf(node, sizeof(node), "/dev/fgds_%04x_%02x_%02x_%x", domain, bus,
                device, function);
  return node;
}

}  // namespace fgds::kmod
