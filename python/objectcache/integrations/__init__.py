"""Backends for the KV-cache slots of serving stacks (docs/integrations.md): one module per
framework (`objectcache.integrations.vllm`, `.sglang`, `.lmcache`), each imported by the
framework itself through the `module_path` its configuration names. Importing this package
imports no framework."""
