// The cuFile driver calls: open/close, use count, properties, version.
#include "dropin/cufile/guard.h"
#include "dropin/cufile/include/cufile.h"
#include "dropin/cufile/library.h"

using fgds::cufile::Guard;
using fgds::cufile::Library;

namespace {

// The cuFile API level the drop-in implements: 1.7, the first with the
// stream calls (kvikio asks for >= 1070 before using them, >= 1060 for
// the batch calls).
constexpr int kCufileApiVersion = 1070;

}  // namespace

extern "C" {

CUfileError_t cuFileDriverOpen(void) {
  return Guard([] { return Library::Get().Open(); });
}

CUfileError_t cuFileDriverClose(void) {
  return Guard([] { return Library::Get().Close(); });
}

// cufile.h maps cuFileDriverClose to _v2 by a macro; both are exported so
// that programs built against either spelling bind.
CUfileError_t cuFileDriverClose_v2(void) {
  return Guard([] { return Library::Get().Close(); });
}

long cuFileUseCount(void) { return Library::Get().UseCount(); }

CUfileError_t cuFileDriverGetProperties(CUfileDrvProps_t* props) {
  return Guard([&] { return Library::Get().GetProperties(props); });
}

CUfileError_t cuFileDriverSetPollMode(bool poll, size_t poll_threshold_size) {
  return Guard(
      [&] { return Library::Get().SetPollMode(poll, poll_threshold_size); });
}

CUfileError_t cuFileDriverSetMaxDirectIOSize(size_t max_direct_io_size) {
  return Guard(
      [&] { return Library::Get().SetMaxDirectIoSize(max_direct_io_size); });
}

CUfileError_t cuFileDriverSetMaxCacheSize(size_t max_cache_size) {
  return Guard([&] { return Library::Get().SetMaxCacheSize(max_cache_size); });
}

CUfileError_t cuFileDriverSetMaxPinnedMemSize(size_t max_pinned_size) {
  return Guard(
      [&] { return Library::Get().SetMaxPinnedMemSize(max_pinned_size); });
}

CUfileError_t cuFileGetVersion(int* version) {
  if (version == nullptr) {
    return fgds::cufile::Status(CU_FILE_INVALID_VALUE);
  }
  *version = kCufileApiVersion;
  return fgds::cufile::Ok();
}

}  // extern "C"
