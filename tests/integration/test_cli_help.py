"""`oc --help` and `oc <command> --help` for every subcommand (issue 18): exit 0, print every
flag with its value placeholder and default, and an example. The help comes from the same flag
table that parses the command line (client/bin/oc_flags.h), so every flag the help lists is
also accepted, and a flag it does not list is refused: both are checked here."""
import os
import re
import subprocess

import pytest

OC = os.environ.get("OC_CLI_BIN", "")
pytestmark = pytest.mark.skipif(not os.path.exists(OC), reason="oc CLI not built (OC_CLI_BIN)")


def oc(*args):
    return subprocess.run([OC, *args], capture_output=True, text=True, timeout=30)


def commands():
    """The subcommands `oc --help` lists."""
    p = oc("--help")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.split("commands:\n", 1)[1].splitlines()
    return [line.split()[0] for line in lines if line.startswith("  ")]


def test_oc_help_lists_every_command():
    assert commands() == ["schedule", "keys", "put-chunks", "get-layers", "probe"]
    assert oc("help").returncode == 0 and oc("-h").returncode == 0


@pytest.mark.parametrize("command", ["schedule", "keys", "put-chunks", "get-layers", "probe"])
def test_command_help(command):
    for flag in ("--help", "-h"):
        p = oc(command, flag)
        assert p.returncode == 0, (command, p.stderr)
        assert p.stderr == ""
        text = p.stdout
        assert text.startswith(f"usage: oc {command} [flags]"), text
        assert "\nexample" in text and f"  oc {command} " in text, text
    # Every flag row: "  --name VALUE  help (default: x)"; collect them.
    rows = re.findall(r"^  (--[a-z-]+)( [^ ]+)?  ", text, re.M)
    names = [r[0] for r in rows]
    assert "--help" in names and len(names) >= 4, text
    assert "(default: " in text
    # --help wins wherever it appears, even after flags that would fail.
    p = oc(command, "--no-such-flag-either", "--help")
    assert p.returncode == 0 and p.stdout == text, p.stderr
    p = oc(command, "--help", "--bucket")
    assert p.returncode == 0, p.stderr
    # Listed flags are accepted by the parser; an unlisted one is refused.
    for name, value in rows:
        if name == "--help":
            continue
        args = [name, "x"] if value else [name]
        p = oc(command, *args)
        assert "unknown flag" not in p.stderr, (command, name, p.stderr)
    p = oc(command, "--definitely-not-a-flag", "1")
    assert p.returncode == 2 and "unknown flag --definitely-not-a-flag" in p.stderr, p.stderr


def test_defaults_shown_are_the_defaults_used():
    """The help's defaults are the table's fallbacks, which the commands use."""
    text = oc("get-layers", "--help").stdout
    assert re.search(r"--via ucx\|http +.*\(default: ucx\)", text), text
    assert re.search(r"--layout kv_l2td\|kv_2ltd +.*\(default: kv_l2td\)", text), text
    assert re.search(r"--chunk-tokens G +.*\(default: 16\)", text), text
    assert re.search(r"--via http\|ucx +.*\(default: http\)", oc("put-chunks", "--help").stdout)
    assert re.search(r"--margin-gbps D +.*\(default: 5\)", oc("schedule", "--help").stdout)
