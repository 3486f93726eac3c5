# data_plane_bench: UCX puts into a client buffer (shm and TCP, flush vs fence ordering) against
# memcpy of the same bytes. Uses the data-plane internals (private headers) of both ends.
oc_add_bench(data_plane_bench
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/data_plane_bench.cc
  LIBS oc_storage_kv_internals oc_client PkgConfig::UCX Threads::Threads)
target_include_directories(data_plane_bench PRIVATE
  ${PROJECT_SOURCE_DIR}/client/src
  ${PROJECT_SOURCE_DIR}/storage-server/src/data_plane)
