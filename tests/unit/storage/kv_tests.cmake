# kv_*_test.cc: the KV-cache descriptor calls (storage-server/src/kv/), joined to storage_test.
# They receive over UCX with the client library, so the binary links oc_client (tests only).
# OC_KV_TESTS_ALONE=ON (a cache variable for a private build dir) builds them as
# storage_kv_test instead, so they can run while other storage tests are mid-change.
option(OC_KV_TESTS_ALONE "Build kv_*_test.cc as storage_kv_test, apart from storage_test" OFF)
file(GLOB storage_kv_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/kv_*_test.cc)
if(TARGET oc_client AND storage_kv_tests AND NOT OC_FUZZ)
  if(OC_KV_TESTS_ALONE)
    oc_add_unit_tests(NAME storage_kv_test SOURCES ${storage_kv_tests}
                      LIBS oc_storage oc_client)
    target_include_directories(storage_kv_test PRIVATE ${PROJECT_SOURCE_DIR}/storage-server/src)
  elseif(TARGET storage_test)
    target_sources(storage_test PRIVATE ${storage_kv_tests})
    target_link_libraries(storage_test PRIVATE oc_client)
  endif()
endif()
