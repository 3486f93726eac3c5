# objectcache_bench: descriptor GETs (UCX, HTTP body) vs per-object and per-chunk-per-layer
# range GETs against a running gateway; bench/objectcache_bench.py starts the server and plots.
oc_add_bench(objectcache_bench SOURCES objectcache_bench.cc
             LIBS oc_client oc_descriptor fmt::fmt nlohmann_json::nlohmann_json)
