# storage_bench: layer-slice reads (ReadSlices) from a warm RocksDB store, per extent layout
# and read mode, against memcpy of the same bytes (bench/README.md, docs/decisions.md).
oc_add_bench(storage_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/storage_bench.cc
             LIBS oc_storage_rocks oc_storage_kv_internals oc_testutil Threads::Threads)
