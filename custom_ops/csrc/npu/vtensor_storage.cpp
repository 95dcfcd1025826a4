// The storage of a virtual KV cache's reservation on the NPU (SPEC §3: nothing leaks). On CPU and
// CUDA the wrapped storage holds the cache's Python owner, whose death frees the reservation; a
// torch_npu storage cannot hold a Python object, so it is made by torch_npu's from_blob with a
// deleter that records the reservation's address when the last view dies, and the Python driver
// (custom_ops/vtensor/npu_driver.py, `collect`) then drops that cache's owner: the reservation is
// freed, stream-ordered, as on the other devices. The deleter runs on whichever thread drops the
// storage, so it only appends to a locked list.
#include <mutex>
#include <vector>

#include <torch/library.h>

#include "torch_npu/csrc/aten/common/from_blob.h"

namespace custom_ops_npu {
namespace {

std::mutex freed_mutex;
std::vector<int64_t> freed;  // reservations whose storage died since the last collect

}  // namespace

// A uint8 tensor [nbytes] over [address, address + nbytes) on `device`.
at::Tensor vtensor_npu_storage(int64_t address, int64_t nbytes, c10::Device device)
{
    TORCH_CHECK(device.type() == c10::DeviceType::PrivateUse1, "_vtensor_npu_storage: device must be an NPU, got ",
                device);
    TORCH_CHECK(address != 0 && nbytes > 0, "_vtensor_npu_storage: needs a reserved range, got address ", address,
                " and ", nbytes, " bytes");
    return at_npu::native::from_blob(
        reinterpret_cast<void *>(address), {nbytes},
        [address](void *) {
            std::lock_guard<std::mutex> lock(freed_mutex);
            freed.push_back(address);
        },
        at::TensorOptions().dtype(at::kByte).device(device));
}

// The addresses recorded since the last call (and forgets them).
std::vector<int64_t> vtensor_npu_freed()
{
    std::lock_guard<std::mutex> lock(freed_mutex);
    std::vector<int64_t> out;
    out.swap(freed);
    return out;
}

}  // namespace custom_ops_npu

// Internal ops of the NPU vtensor driver (no tensor inputs: one kernel for every dispatch key).
TORCH_LIBRARY_FRAGMENT(custom, m)
{
    m.def("_vtensor_npu_storage(int address, int nbytes, Device device) -> Tensor",
          &custom_ops_npu::vtensor_npu_storage);
    m.def("_vtensor_npu_freed() -> int[]", &custom_ops_npu::vtensor_npu_freed);
}
