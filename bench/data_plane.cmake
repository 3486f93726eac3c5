# data_plane_bench: UCX puts into a client buffer (shm and TCP, flush vs fence ordering) against
# memcpy of the same bytes. Both ends' data-plane sources are compiled in, as in client_test.
file(GLOB data_plane_bench_server_sources CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/storage-server/src/data_plane/*.cc)
oc_add_bench(data_plane_bench
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/data_plane_bench.cc
    ${data_plane_bench_server_sources}
    ${PROJECT_SOURCE_DIR}/client/src/ucx_receiver.cc
  LIBS oc_descriptor PkgConfig::UCX Threads::Threads)
target_include_directories(data_plane_bench PRIVATE
  ${PROJECT_SOURCE_DIR}/client/include
  ${PROJECT_SOURCE_DIR}/client/src
  ${PROJECT_SOURCE_DIR}/storage-server/include
  ${PROJECT_SOURCE_DIR}/storage-server/src/data_plane)
