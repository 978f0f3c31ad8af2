"""What a workload's "work done" counts, so that the WPS rate says what it adds up.

The WPS fit ``t = alpha + w / v`` uses the work a round reports it did when every round reports
it (the runners report bytes). ``v`` is then a rate of *those* bytes over each round's time
beyond alpha: not the sum of the workload's own PIs (the built-in workload writes a file and
reads it back in one round, so its ``wps`` is the file's size per second of both, neither
``write_bw`` nor ``write_bw + read_bw``). Reports print this beside ``wps``.
"""

from __future__ import annotations

from pilot_sys.session.journal import WorkloadSpec

#: parser (or workload kind) -> what its work done counts
WORK_DONE = {
    "builtin": "bytes of the round's file, each written and then read back",
    "fio": "bytes fio read and wrote, all jobs together",
    "dd": "bytes dd copied",
    "iperf3": "bytes iperf3 moved, both directions together",
}


def work_done_text(spec: WorkloadSpec) -> str | None:
    """What ``spec``'s work done counts, None when its workload does not say."""
    if spec.kind == "builtin" and not spec.options.get("read_back", True):
        return "bytes of the round's file, written"
    return WORK_DONE.get("builtin" if spec.kind == "builtin" else str(spec.parser or ""))


def wps_description(work_done: str | None, work_unit: str) -> str:
    """What the ``wps`` PI is, as the summary and the report state it beside its figure."""
    fit = "the rate v of t = alpha + w / v over rounds of different work"
    if work_done is not None:
        return (
            f"{fit}, w = {work_done}; a rate of that work over the round's time, "
            "not a sum of the other PIs"
        )
    unit = work_unit if work_unit and work_unit != "work" else "the work amount (no unit given)"
    return f"{fit}, w = {unit} per round; not a sum of the other PIs"
