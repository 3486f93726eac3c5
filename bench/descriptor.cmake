# Descriptor decode + validate, encode, object names and chunk hashing (descriptor_bench.cc).
oc_add_bench(descriptor_bench SOURCES descriptor_bench.cc LIBS oc_descriptor)
