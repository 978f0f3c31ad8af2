"""The hardware and software context printed in report.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from pilot_sys.session.context import _cpu_model, _governors, _os_name, collect_context


def test_cpu_model_from_cpuinfo() -> None:
    x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t: fpu\n"
    assert _cpu_model(x86) == "AMD EPYC 7B13"
    arm = "processor\t: 0\nBogoMIPS\t: 50.00\n\nModel\t: Raspberry Pi 4 Model B Rev 1.4\n"
    assert _cpu_model(arm) == "Raspberry Pi 4 Model B Rev 1.4"
    assert _cpu_model("processor\t: 0\n") is None and _cpu_model(None) is None


def test_os_and_governors(tmp_path: Path) -> None:
    assert (
        _os_name('NAME="Debian GNU/Linux"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')
        == "Debian GNU/Linux 12 (bookworm)"
    )
    assert _os_name("ID=alpine\n") is None
    for cpu, gov in (("cpu0", "performance"), ("cpu1", "powersave"), ("cpu2", "performance")):
        d = tmp_path / cpu / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(gov + "\n")
    assert _governors(str(tmp_path)) == ["performance", "powersave"]
    assert _governors(str(tmp_path / "none")) == []


@pytest.mark.live
def test_unknown_is_none_never_invented() -> None:
    ctx = collect_context(["pilot-sys", "run"])
    assert ctx["command_line"] == ["pilot-sys", "run"]
    # this VM has no cpufreq directory: the governor is unknown, not guessed
    if not list(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")):
        assert ctx["governor"] is None
