#include "tests/gpu/gpu_kernels.h"

#include <dlfcn.h>

#include "tests/gpu/gpu_env.h"
#include "usrbio/cuda/cuda_api.h"
#include "usrbio/cuda/cuda_error.h"

namespace fgds::testing {
namespace {

// PTX ISA 7.0 for sm_80 and later (JIT-compiled for the GPU at hand).
// spin: one thread reads %globaltimer until `ns` have passed.
// checksum: a grid-stride loop; each thread sums bytes[i] * (i % 65521 + 1)
// over its indexes and adds its sum to *out atomically.
constexpr char kPtx[] = R"(
.version 7.0
.target sm_80
.address_size 64

.visible .entry fgds_spin(.param .u64 ns)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [ns];
  mov.u64 %rd2, %globaltimer;
SPIN:
  mov.u64 %rd3, %globaltimer;
  sub.u64 %rd4, %rd3, %rd2;
  setp.lt.u64 %p1, %rd4, %rd1;
  @%p1 bra SPIN;
  ret;
}

.visible .entry fgds_checksum(.param .u64 data, .param .u64 n,
                              .param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [data];
  ld.param.u64 %rd2, [n];
  ld.param.u64 %rd3, [out];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd3, %rd3;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd4, %r2, %r3;
  cvt.u64.u32 %rd5, %r1;
  add.u64 %rd4, %rd4, %rd5;
  mul.wide.u32 %rd6, %r3, %r4;
  mov.u64 %rd7, 0;
LOOP:
  setp.ge.u64 %p1, %rd4, %rd2;
  @%p1 bra DONE;
  add.u64 %rd8, %rd1, %rd4;
  ld.global.u8 %r5, [%rd8];
  cvt.u64.u32 %rd9, %r5;
  rem.u64 %rd10, %rd4, 65521;
  add.u64 %rd10, %rd10, 1;
  mul.lo.u64 %rd11, %rd9, %rd10;
  add.u64 %rd7, %rd7, %rd11;
  add.u64 %rd4, %rd4, %rd6;
  bra LOOP;
DONE:
  atom.global.add.u64 %rd12, [%rd3], %rd7;
  ret;
}
)";

using ModuleLoadData = cuda::CUresult (*)(void** module, const void* image);
using ModuleUnload = cuda::CUresult (*)(void* module);
using ModuleGetFunction = cuda::CUresult (*)(void** function, void* module,
                                             const char* name);
using LaunchKernel = cuda::CUresult (*)(void* f, unsigned gx, unsigned gy,
                                        unsigned gz, unsigned bx, unsigned by,
                                        unsigned bz, unsigned shared,
                                        cuda::CUstream stream, void** params,
                                        void** extra);

struct ModuleApi {
  ModuleLoadData load = nullptr;
  ModuleUnload unload = nullptr;
  ModuleGetFunction get_function = nullptr;
  LaunchKernel launch = nullptr;
};

// The same libcuda.so.1 the library loaded (dlopen returns that handle).
const ModuleApi& Modules() {
  static ModuleApi* api = [] {
    auto* a = new ModuleApi;
    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return a;
    a->load =
        reinterpret_cast<ModuleLoadData>(dlsym(handle, "cuModuleLoadData"));
    a->unload = reinterpret_cast<ModuleUnload>(dlsym(handle, "cuModuleUnload"));
    a->get_function = reinterpret_cast<ModuleGetFunction>(
        dlsym(handle, "cuModuleGetFunction"));
    a->launch = reinterpret_cast<LaunchKernel>(dlsym(handle, "cuLaunchKernel"));
    return a;
  }();
  return *api;
}

// Makes `context` current until the end of the scope.
class Bind {
 public:
  explicit Bind(cuda::CUcontext context) {
    const cuda::CudaApi& api = GpuEnv::Get().api();
    api.cuCtxGetCurrent(&previous_);
    api.cuCtxSetCurrent(context);
  }
  ~Bind() { GpuEnv::Get().api().cuCtxSetCurrent(previous_); }

 private:
  cuda::CUcontext previous_ = nullptr;
};

}  // namespace

uint64_t HostChecksum(const uint8_t* bytes, uint64_t n) {
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += bytes[i] * (i % 65521 + 1);
  return sum;
}

GpuKernels::GpuKernels(cuda::CUcontext context) : context_(context) {
  const ModuleApi& m = Modules();
  if (m.load == nullptr || m.get_function == nullptr || m.launch == nullptr) {
    why_ = "libcuda.so.1 lacks the module entry points";
    return;
  }
  const cuda::CudaApi& api = GpuEnv::Get().api();
  Bind bind(context_);
  cuda::CUresult result = m.load(&module_, kPtx);
  if (result != cuda::kCudaSuccess) {
    why_ = "cuModuleLoadData: " + cuda::CuResultText(&api, result);
    module_ = nullptr;
    return;
  }
  void* spin = nullptr;
  result = m.get_function(&spin, module_, "fgds_spin");
  if (result == cuda::kCudaSuccess) {
    result = m.get_function(&checksum_, module_, "fgds_checksum");
  }
  if (result != cuda::kCudaSuccess) {
    why_ = "cuModuleGetFunction: " + cuda::CuResultText(&api, result);
    return;
  }
  spin_ = spin;
}

GpuKernels::~GpuKernels() {
  if (module_ != nullptr && Modules().unload != nullptr) {
    Bind bind(context_);
    Modules().unload(module_);
  }
}

bool GpuKernels::Spin(cuda::CUstream stream, uint64_t ns) {
  Bind bind(context_);
  void* params[] = {&ns};
  const cuda::CUresult result =
      Modules().launch(spin_, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr);
  if (result != cuda::kCudaSuccess) {
    why_ = "launch spin: " + cuda::CuResultText(&GpuEnv::Get().api(), result);
  }
  return result == cuda::kCudaSuccess;
}

bool GpuKernels::Checksum(uint64_t dev, uint64_t n, uint64_t* sum) {
  const cuda::CudaApi& api = GpuEnv::Get().api();
  Bind bind(context_);
  cuda::CUdeviceptr out = 0;
  cuda::CUresult result = api.cuMemAlloc(&out, sizeof(uint64_t));
  if (result == cuda::kCudaSuccess) result = api.cuMemsetD8(out, 0, 8);
  cuda::CUstream stream = nullptr;
  if (result == cuda::kCudaSuccess) {
    result = api.cuStreamCreate(&stream, cuda::kStreamNonBlocking);
  }
  if (result == cuda::kCudaSuccess) {
    uint64_t data = dev;
    uint64_t out_address = out;
    void* params[] = {&data, &n, &out_address};
    result = Modules().launch(checksum_, 264, 1, 1, 256, 1, 1, 0, stream,
                              params, nullptr);
  }
  if (result == cuda::kCudaSuccess) result = api.cuStreamSynchronize(stream);
  if (result == cuda::kCudaSuccess) {
    result = api.cuMemcpyDtoH(sum, out, sizeof(uint64_t));
  }
  if (result != cuda::kCudaSuccess) {
    why_ = "checksum: " + cuda::CuResultText(&api, result);
  }
  if (stream != nullptr) api.cuStreamDestroy(stream);
  if (out != 0) api.cuMemFree(out);
  return result == cuda::kCudaSuccess;
}

}  // namespace fgds::testing
