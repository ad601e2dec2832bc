"""memtrace compare: one table per region, every backend side by side."""
import json

from mt import BACKENDS, CLI, clean_env, program, run


def compare(*args, check=True):
    return run([CLI, "compare", *args], clean_env(), check=check)


def test_json_per_region_and_backend():
    r = compare("--repeat", "2", "--json", "--", program("churn"), "trim", "20")
    report = json.loads(r.stdout)
    (region,) = report["regions"]
    assert region["name"] == "trim"
    assert set(region["backends"]) == set(BACKENDS)
    glibc = region["backends"]["glibc"]
    assert glibc["runs"] == 2 and glibc["calls"] == 20
    assert glibc["large_max_live"] == 2 and glibc["large_allocations"] == 2
    assert glibc["brk_shrink"] >= 0.9
    for b in BACKENDS:
        m = region["backends"][b]
        assert m["time_min_s"] <= m["time_median_s"]
        assert m["allocations"] == 2


def test_whole_program_without_regions():
    r = compare("--backends", "glibc", "--repeat", "1", "--json", "--",
                program("known_calls"), "10")
    (region,) = json.loads(r.stdout)["regions"]
    assert region["name"] == "(whole program)"


def test_missing_backend_is_skipped_with_a_note():
    r = compare("--backends", "glibc,hoard", "--repeat", "1", "--csv", "--",
                program("churn"), "steady", "5")
    assert r.returncode == 0
    assert "skipping hoard" in r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "region,metric,backend,value"
    assert all(",glibc," in l for l in lines[1:])


def test_table_and_ratio_line():
    r = compare("--backends", "glibc,tcmalloc", "--repeat", "1", "--",
                program("regions"), "5")
    assert "region work" in r.stdout and "region inner" in r.stdout
    assert "inner / work" in r.stdout


def test_failed_command_is_reported():
    """A run ended by a signal failed; one that exits non-zero, as the
    program always does, is measured all the same, and said."""
    r = compare("--backends", "glibc", "--repeat", "1", "--", "/bin/sh", "-c",
                "kill -SEGV $$", check=False)
    assert r.returncode == 1
    assert "failed under glibc" in r.stderr
    r = compare("--backends", "glibc,tcmalloc", "--repeat", "2", "--", "false")
    assert "exited with status 1: measured all the same" in r.stderr
    assert "failed" not in r.stderr


def test_usage():
    r = compare("--repeat", "x", "--", "true", check=False)
    assert r.returncode == 2 and "--repeat needs a number" in r.stderr
    r = compare("--json", "--csv", "--", "true", check=False)
    assert r.returncode == 2
