#include "oc/ucx/mapped_memory.h"

#include <cstring>

#include "oc/ucx/status.h"

namespace oc::ucx {

Result<std::unique_ptr<MappedMemory>> MappedMemory::Map(ucp_context_h context, void* data,
                                                        uint64_t length) {
  std::unique_ptr<MappedMemory> m(new MappedMemory(context));
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = data;
  params.length = length;
  OC_RETURN_IF_ERROR(FromUcs(ucp_mem_map(context, &params, &m->memh_), "ucp_mem_map"));
  m->bytes_ = MutableByteSpan(static_cast<std::byte*>(data), length);
  OC_RETURN_IF_ERROR(m->Pack());
  return m;
}

Result<std::unique_ptr<MappedMemory>> MappedMemory::Allocate(ucp_context_h context, uint64_t length,
                                                             const OwnerToken& owner) {
  std::unique_ptr<MappedMemory> m(new MappedMemory(context));
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  params.address = nullptr;
  params.length = kOwnerPageBytes + length;
  params.flags = UCP_MEM_MAP_ALLOCATE;
  OC_RETURN_IF_ERROR(FromUcs(ucp_mem_map(context, &params, &m->memh_), "ucp_mem_map(allocate)"));
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  OC_RETURN_IF_ERROR(FromUcs(ucp_mem_query(m->memh_, &attr), "ucp_mem_query"));
  if (attr.address == nullptr || attr.length < params.length) {
    return Status::Internal("ucp_mem_map allocated less than asked");
  }
  // Shared-memory and mmap pages come zeroed from the kernel, UCX's heap fallback does not.
  auto* start = static_cast<std::byte*>(attr.address);
  std::memset(start, 0, params.length);
  std::memcpy(start, owner.data(), owner.size());
  m->bytes_ = MutableByteSpan(start + kOwnerPageBytes, length);
  OC_RETURN_IF_ERROR(m->Pack());
  return m;
}

MappedMemory::~MappedMemory() {
  if (memh_ != nullptr) {
    (void)ucp_mem_unmap(context_, memh_);
  }
}

Status MappedMemory::Pack() {
  void* rkey = nullptr;
  size_t rkey_bytes = 0;
  OC_RETURN_IF_ERROR(FromUcs(ucp_rkey_pack(context_, memh_, &rkey, &rkey_bytes), "ucp_rkey_pack"));
  const auto* first = static_cast<const std::byte*>(rkey);
  rkey_.assign(first, first + rkey_bytes);
  ucp_rkey_buffer_release(rkey);
  return Status::Ok();
}

}  // namespace oc::ucx
