#include "oc/storage/options.h"

#include <string>

#include "oc/common/config.h"
#include "oc/storage/types.h"

namespace oc::storage {

Status StoreOptions::Validate() const {
  if (data_dir.empty()) {
    return Status::InvalidArgument("storage.data_dir", "must not be empty");
  }
  if (default_extent_bytes == 0 || default_extent_bytes > kMaxExtentBytes) {
    return Status::InvalidArgument("storage.default_extent_bytes",
                                   "must be 1.." + std::to_string(kMaxExtentBytes));
  }
  if (read_threads > 64) {
    return Status::InvalidArgument("storage.read_threads", "must be 0..64");
  }
  if (write_batch_bytes < default_extent_bytes || write_batch_bytes > (1ull << 30)) {
    return Status::InvalidArgument("storage.write_batch_bytes",
                                   "must be default_extent_bytes..1GiB");
  }
  if (extent_layout != ExtentLayout::kSstBlocks && extent_layout != ExtentLayout::kBlobFiles) {
    return Status::InvalidArgument("storage.extent_layout", "unknown layout");
  }
  OC_RETURN_IF_ERROR(kv.Validate());
  return Status::Ok();
}

Status ApplyConfig(const oc::Config& config, StoreOptions* options) {
  OC_RETURN_IF_ERROR(config.Read("storage.data_dir", &options->data_dir));
  OC_RETURN_IF_ERROR(
      config.ReadSize("storage.default_extent_bytes", &options->default_extent_bytes));
  OC_RETURN_IF_ERROR(config.ReadSize("storage.block_cache_bytes", &options->block_cache_bytes));
  OC_RETURN_IF_ERROR(config.Read("storage.sync_writes", &options->sync_writes));
  OC_RETURN_IF_ERROR(config.Read("storage.read_threads", &options->read_threads));
  OC_RETURN_IF_ERROR(config.ReadSize("storage.write_batch_bytes", &options->write_batch_bytes));
  OC_RETURN_IF_ERROR(config.ReadSize("storage.reclaim_after_bytes", &options->reclaim_after_bytes));
  std::string layout;
  OC_RETURN_IF_ERROR(config.Read("storage.extent_layout", &layout));
  if (layout == "sst") {
    options->extent_layout = ExtentLayout::kSstBlocks;
  } else if (layout == "blob") {
    options->extent_layout = ExtentLayout::kBlobFiles;
  } else if (!layout.empty()) {
    return Status::InvalidArgument("storage.extent_layout", "must be \"sst\" or \"blob\"");
  }
  std::string mode;
  OC_RETURN_IF_ERROR(config.Read("storage.slice_read_mode", &mode));
  if (mode == "auto") {
    options->slice_read_mode = SliceReadMode::kAuto;
  } else if (mode == "get") {
    options->slice_read_mode = SliceReadMode::kSerialGet;
  } else if (mode == "multiget") {
    options->slice_read_mode = SliceReadMode::kMultiGet;
  } else if (mode == "parallel") {
    options->slice_read_mode = SliceReadMode::kParallelGet;
  } else if (!mode.empty()) {
    return Status::InvalidArgument("storage.slice_read_mode",
                                   "must be auto, get, multiget or parallel");
  }
  return Status::Ok();
}

}  // namespace oc::storage
