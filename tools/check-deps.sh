#!/usr/bin/env bash
# Fails when a module reaches past another module's public headers, or when the module graph
# of docs/design.md ("Modules") stops being one-way, or when a comment cites a file that is not
# in the tree. Run by tools/test; needs only git and Debian's python3.
#
#   1. Includes: a source file of module M may include `oc/<x>/...` only for x in M's allowed
#      set (the one-way order), and a quoted include that names no `oc/` header must be a file
#      of M itself, never one found only in another module's `src/`; a header has one spelling.
#   2. CMake: no target exports a `src` root (PUBLIC or INTERFACE) except the testing-only
#      `*_internals` targets, which only tests/ and bench/ may link; no module names another
#      module's `src/` directory; the client library links only the modules it may use, and
#      the Python module (python/) only the client library.
#   3. Citations: every repository path a comment or a document cites exists.
#   4. Backends: the rows of storage-server/src/backends.def name the backend folders; no source
#      outside a folder includes its headers, and the gateway links none of their targets.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"  # optional: the tree to check (default: this one)
exec /usr/bin/python3 - <<'PY'
import os
import re
import subprocess
import sys

files = subprocess.run(["git", "ls-files"], check=True, capture_output=True,
                       text=True).stdout.split()
errors = []

# Module roots, most specific first; the public header prefix each owns; what each may include.
MODULES = [
    ("common/sigv4", "sigv4", {"common", "sigv4"}),
    ("common/ucx", "ucx", {"common", "ucx"}),
    ("common", "common", {"common"}),
    ("descriptor", "descriptor", {"common", "descriptor"}),
    ("scheduler", "sched", {"common", "descriptor", "sched"}),
    ("storage-server", "storage", {"common", "ucx", "descriptor", "sched", "storage"}),
    ("gateway", "gateway", {"common", "sigv4", "descriptor", "sched", "storage", "gateway"}),
    ("client/bin", "client", {"common", "descriptor", "sched", "client"}),
    ("client", "client", {"common", "sigv4", "ucx", "descriptor", "client"}),
    # The Python package's native module: liboc_client's public headers only.
    ("python", "client", {"common", "descriptor", "client"}),
]
# Libraries a module's targets may link (targets of the project; system packages are free).
CLIENT_LIB_LINKS = {"oc_common", "oc_descriptor", "oc_sigv4", "oc_ucx"}
# The storage backends stay out of the gateway: oc-gateway and oc_gateway reach storage only
# through the RPC client (docs/design.md, "Modules"). The backends are the rows of
# storage-server/src/backends.def: each folder's target oc_storage_<folder>, and the project
# libraries those targets link beyond the Store API (RocksDB, librados), are backend libraries.
REGISTRY = "storage-server/src/backends.def"
backend_row_re = re.compile(r"^OC_BACKEND\(\s*(\w+)\s*,\s*\"([^\"]+)\"\s*,\s*(\w+)\s*,")
BACKEND_FOLDERS = []
for lineno, line in enumerate(open(REGISTRY, encoding="utf-8"), 1):
    if line.startswith("OC_BACKEND("):
        m = backend_row_re.match(line)
        if not m:
            errors.append(f"{REGISTRY}:{lineno}: a row must start OC_BACKEND(Id, \"name\", folder,")
            continue
        BACKEND_FOLDERS.append(m.group(3))
if not BACKEND_FOLDERS:
    errors.append(f"{REGISTRY}: no OC_BACKEND rows")
BACKEND_LIBS = {"oc_storage_open"} | {f"oc_storage_{f}" for f in BACKEND_FOLDERS}
# Libraries every storage target may link; a backend target's other oc_* links are its own.
STORE_API_LIBS = {"oc_storage_api", "oc_common", "oc_descriptor", "oc_sched"}
for folder in BACKEND_FOLDERS:
    cmake = f"storage-server/src/{folder}/CMakeLists.txt"
    if not os.path.exists(cmake):
        errors.append(f"{REGISTRY}: backend folder {folder} has no {cmake}")
        continue
    text = re.sub(r"#[^\n]*", "", open(cmake, encoding="utf-8").read())
    for body in re.findall(r"\btarget_link_libraries\s*\(([^)]*)\)", text, re.S):
        words = body.split()
        if words and words[0] == f"oc_storage_{folder}":
            BACKEND_LIBS |= {w for w in words[1:] if w.startswith("oc_")} - STORE_API_LIBS
NO_BACKEND_TARGETS = {"oc-gateway", "oc_gateway"}


def module_of(path):
    for root, name, allowed in MODULES:
        if path == root or path.startswith(root + "/"):
            return root, allowed
    return None, None


def top_module(root):
    # The folder a module's private sources live under (client/bin belongs to client).
    return "client" if root == "client/bin" else root


src_files = [f for f in files if f.endswith((".h", ".cc", ".def"))]
spellings = {}  # header -> {spelling: first place it is used}
include_re = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]')
for f in src_files:
    root, allowed = module_of(f)
    if root is None:
        continue  # tests/, bench/ and tools may use any public header and the _internals seams
    own = top_module(root)
    with open(f, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            m = include_re.match(line)
            if not m:
                continue
            inc = m.group(2)
            if inc.startswith("oc/"):
                prefix = inc.split("/")[1]
                if prefix not in allowed:
                    errors.append(f"{f}:{lineno}: includes {inc}: module {root} may include "
                                  f"only oc/{{{','.join(sorted(allowed))}}}")
                continue
            if m.group(1) != '"':
                continue
            # A quoted project header: it must be a file of this module (some src root of it).
            mine = [s for s in src_files if s.startswith(own + "/") and s.endswith("/" + inc)]
            if len(mine) == 1:
                spellings.setdefault(mine[0], {}).setdefault(inc, f"{f}:{lineno}")
            if mine:
                continue
            theirs = [s for s in src_files if s.endswith("/" + inc) and "/src/" in s]
            if theirs:
                errors.append(f"{f}:{lineno}: includes \"{inc}\", a private header of "
                              f"{theirs[0].split('/src/')[0]}")

# A backend's folder is its own: no source outside it includes its headers (tests/ and bench/
# may, through the *_internals seams). The rest of the tree knows a backend by its row.
for f in src_files:
    if not f.startswith(("storage-server/", "gateway/", "client/", "common/", "python/")):
        continue
    with open(f, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            m = include_re.match(line)
            if not m or m.group(1) != '"':
                continue
            folder = m.group(2).split("/")[0]
            if folder in BACKEND_FOLDERS and \
                    not f.startswith(f"storage-server/src/{folder}/"):
                errors.append(f"{f}:{lineno}: includes {m.group(2)}, a header of backend "
                              f"{folder}; outside its folder a backend is its row of {REGISTRY}")

for header, names in sorted(spellings.items()):
    if len(names) > 1:
        places = "; ".join(f"\"{n}\" at {where}" for n, where in sorted(names.items()))
        errors.append(f"{header} is included under {len(names)} spellings: {places}")

# CMake: exported src roots, other modules' src dirs, _internals used outside tests/bench.
cmake_files = [f for f in files if f.endswith("CMakeLists.txt") or f.endswith(".cmake")]
call_re = re.compile(r"\b(target_include_directories|target_link_libraries)\s*\(([^)]*)\)",
                     re.S)
for f in cmake_files:
    text = open(f, encoding="utf-8").read()
    text_nc = re.sub(r"#[^\n]*", "", text)
    root, _ = module_of(f)
    in_tests = f.startswith(("tests/", "bench/"))
    for call, body in call_re.findall(text_nc):
        words = body.split()
        if not words:
            continue
        target = words[0]
        if call == "target_include_directories":
            mode = None
            for w in words[1:]:
                if w in ("PUBLIC", "PRIVATE", "INTERFACE", "SYSTEM", "BEFORE", "AFTER"):
                    mode = w if w in ("PUBLIC", "PRIVATE", "INTERFACE") else mode
                    continue
                exported = mode in ("PUBLIC", "INTERFACE")
                resolved = w.replace("${CMAKE_CURRENT_SOURCE_DIR}", os.path.dirname(f) or ".")
                resolved = resolved.replace("${PROJECT_SOURCE_DIR}/", "")
                is_src = "$" not in resolved and not "<" in resolved and \
                    os.path.basename(os.path.normpath(os.path.join(
                        os.path.dirname(f) if not w.startswith("$") else "", resolved))) != "include"
                if exported and is_src and not target.endswith("_internals") and not in_tests:
                    errors.append(f"{f}: {target} exports include root {w} ({mode}); "
                                  f"only include/ may be public")
                m = re.search(r"PROJECT_SOURCE_DIR\}/([a-z-]+(?:/[a-z]+)?)/src", w)
                if m and root is not None and not m.group(1).startswith(top_module(root)):
                    errors.append(f"{f}: {target} names another module's sources ({w})")
        else:
            for w in words[1:]:
                if w.endswith("_internals") and not in_tests and not target.endswith("_internals"):
                    errors.append(f"{f}: {target} links the testing-only {w}")
            if target in NO_BACKEND_TARGETS:
                linked = {w for w in words[1:] if w in BACKEND_LIBS}
                if linked:
                    errors.append(f"{f}: {target} links {', '.join(sorted(linked))}; the gateway "
                                  f"reaches storage only through oc_storage_rpc_client")
            if target == "oc_python_native":
                extra = {w for w in words[1:] if w.startswith("oc_")} - {"oc_client"}
                if extra:
                    errors.append(f"{f}: the Python module links {', '.join(sorted(extra))}; "
                                  f"it may link only oc_client")
            if target == "oc_client":
                linked = {w for w in words[1:] if w.startswith("oc_")}
                extra = linked - CLIENT_LIB_LINKS
                if extra:
                    errors.append(f"{f}: oc_client links {', '.join(sorted(extra))}; the client "
                                  f"library may link only {', '.join(sorted(CLIENT_LIB_LINKS))}")

# Citations: a repository path (a known top-level folder, then a file with an extension) named
# in a comment of a source file or anywhere in a document must exist.
tops = sorted({f.split("/")[0] for f in files if "/" in f})
cite_re = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(t) for t in tops) +
                     r")/[\w./-]*\w\.(?:md|h|cc|py|csv|toml|json|cmake|sh|txt|def|png))\b")
comment_re = re.compile(r"(//|#)(.*)$")
fileset = set(files)
for f in files:
    if f.startswith("tests/fuzz/corpus/") or f.startswith("bench/results/"):
        continue
    is_doc = f.endswith(".md")
    if not (is_doc or f.endswith((".h", ".cc", ".py", ".sh", ".cmake", "CMakeLists.txt",
                                  ".toml")) or "/" not in f or f.startswith("tools/")):
        continue
    try:
        lines = open(f, encoding="utf-8").read().splitlines()
    except (UnicodeDecodeError, IsADirectoryError):
        continue
    for lineno, line in enumerate(lines, 1):
        if not is_doc:
            m = comment_re.search(line)
            if not m:
                continue
            line = m.group(2)
        for path in cite_re.findall(line):
            # A file, a folder, or a header named by its include spelling (descriptor/codec.h).
            if path in fileset or any(x.startswith(path.rstrip("/") + "/") or
                                      x.endswith("/" + path) for x in fileset):
                continue
            if "<" in path or "*" in path:
                continue
            errors.append(f"{f}:{lineno}: cites {path}, which is not in the tree")

if errors:
    print(f"check-deps: {len(errors)} problem(s):", file=sys.stderr)
    for e in errors:
        print("  " + e, file=sys.stderr)
    sys.exit(1)
print(f"check-deps: {len(src_files)} sources, {len(cmake_files)} CMake files, citations: clean")
PY
