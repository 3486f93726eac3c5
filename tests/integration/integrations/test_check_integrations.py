"""tools/check-integrations (issue 32): on this machine, where no framework is installed, it
must say what it could not check and exit 0; a table that disagrees with an adapter, or with
an installed framework, must fail it. The stand-ins (standins/) play the installed frameworks
to exercise the comparison and the live run against a real gateway: that checks the tool,
not vLLM or SGLang themselves."""
import os
import subprocess
import sys

from integ_util import HERE, PYTHON_DIR, STANDINS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
TOOL = os.path.join(REPO, "tools", "check-integrations")
DOC = os.path.join(REPO, "docs", "integrations.md")


def run(*args, standins=False):
    env = dict(os.environ)
    env["PYTHONPATH"] = STANDINS if standins else ""
    env["OC_PYTHON_DIR"] = PYTHON_DIR
    p = subprocess.run([sys.executable, TOOL, *args], env=env, capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout + p.stderr


def doctored(tmp_path, old, new):
    text = open(DOC, encoding="utf-8").read()
    assert old in text, old
    path = tmp_path / "integrations.md"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return str(path)


def test_says_what_it_could_not_check_and_exits_0():
    code, out = run()
    assert code == 0, out
    assert "[ok]          adapter objectcache.integrations.vllm" in out
    assert "[ok]          adapter objectcache.integrations.sglang" in out
    for framework in ("vLLM", "SGLang", "LMCache"):
        assert f"[not checked] {framework}: not importable here" in out, out
    assert "[not checked] Dynamo: plain S3" in out
    assert "summary: 0 mismatch(es); could not check: " in out
    assert "[MISMATCH]" not in out


def test_an_adapter_that_disagrees_with_the_table_fails(tmp_path):
    doc = doctored(tmp_path, "`batch_get_v1(self, keys: list[str], host_indices: torch.Tensor, "
                   "extra_info=None)", "`batch_get_v1(self, keys: list[str], host_indices: "
                   "torch.Tensor, extra=None)")
    code, out = run("--doc", doc)
    assert code == 1, out
    assert "[MISMATCH]    adapter objectcache.integrations.sglang.batch_get_v1" in out


def test_installed_frameworks_are_compared_and_run_live(server, made_bucket):
    code, out = run("--endpoint", server.endpoint, "--bucket", made_bucket,
                    "--access-key", server.access_key, "--secret-key", server.secret_key,
                    standins=True)
    assert code == 0, out
    for line in ("vLLM SecondaryTierManager: ", "vLLM TransferJob: fields",
                 "vLLM JobResult: fields", "vLLM LookupResult: members",
                 "vLLM: SecondaryTierFactory loads ObjectCacheSecondaryTier",
                 "vLLM live run: store, lookup (HIT), load", "SGLang HiCacheStorage: ",
                 "SGLang HiCacheStorageConfig: fields",
                 "SGLang: the dynamic loader builds ObjectCacheHiCacheStorage"):
        assert f"[ok]          {line}" in out, line + "\n" + out


def test_an_installed_framework_that_disagrees_fails(tmp_path):
    doc = doctored(tmp_path, "`Enum`: `MISS`, `HIT`, `HIT_PENDING`, `RETRY`",
                   "`Enum`: `MISS`, `HIT`, `RETRY`")
    code, out = run("--doc", doc, standins=True)
    assert code == 1, out
    assert "[MISMATCH]    vLLM LookupResult: members" in out
