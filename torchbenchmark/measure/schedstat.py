"""What the kernel saw of this process's threads: time on a CPU, time runnable but waiting for one, per step.

Linux keeps, for every thread, the nanoseconds it sat runnable on a run queue, waiting for a CPU
(``/proc/self/task/<tid>/schedstat``; the kernel's CONFIG_SCHED_INFO), and each thread's CPU time
(``CLOCK_THREAD_CPUTIME_ID``). Read at step boundaries they split each step's wall time on the step's own
thread into *on a CPU*, *waiting for a CPU* (the machine was busy: not the model's cost) and *neither*
(blocked: sleep, I/O, a lock, a wait on another thread or process), and they say how long the process's
other threads (the intra-op pool) waited. Each file is kept open and re-read at offset 0, a couple of
microseconds a thread. Where the kernel has no
such files, the process's CPU time against wall time is the fallback: it cannot tell waiting from blocked.

Around the measured windows the machine's load is read too (``MachineGauge``): its CPU pressure
(``/proc/pressure/cpu``: the share of time some task waited for a CPU), and the CPU time every other
process (and the hypervisor's steal) took (``/proc/stat``), which slows a step without making it wait:
on a core's hardware sibling, or through shared caches and memory. The case's own helper processes (a
data loader's workers, a process it started) are its own work, not other work: every live descendant's
CPU time is read from ``/proc/<pid>/stat``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time

SCHEDSTAT = "schedstat"
PROCESS_TIME = "process CPU time"  # the fallback: no split between waiting and blocked
PSI_CPU = "/proc/pressure/cpu"


def clock_method() -> str:
    """How this process's threads are timed here: ``SCHEDSTAT``, or ``PROCESS_TIME`` where the kernel has no schedstat."""
    return SCHEDSTAT if os.path.exists(f"/proc/self/task/{threading.get_native_id()}/{SCHEDSTAT}") else PROCESS_TIME


@dataclasses.dataclass(frozen=True)
class Sample:
    """One reading: the wall clock, the step thread's CPU and wait, and the other threads' wait, in ns."""

    wall_ns: int
    main_cpu_ns: int
    main_wait_ns: int
    others_wait_ns: int


class ThreadClock:
    """This process's threads' scheduler times, read cheaply and often (see the module docstring).

    Made on the thread that runs the steps. ``refresh`` picks up threads started since (the intra-op
    pool starts with the first parallel op); a thread that ended keeps the times it had.
    """

    def __init__(self) -> None:
        self.main = threading.get_native_id()
        self.method = clock_method()
        self._files: dict[int, int] = {}
        self._ended: dict[int, int] = {}  # the wait of threads gone, so totals never go back
        self._last: dict[int, tuple[int, int]] = {}
        self.refresh()

    def refresh(self) -> None:
        if self.method != SCHEDSTAT:
            return
        with contextlib.suppress(OSError):
            for name in os.listdir("/proc/self/task"):
                tid = int(name)
                if tid not in self._files:
                    with contextlib.suppress(OSError):
                        self._files[tid] = os.open(f"/proc/self/task/{tid}/{SCHEDSTAT}", os.O_RDONLY | os.O_CLOEXEC)

    def _read(self, tid: int, fd: int) -> tuple[int, int]:
        try:
            fields = os.pread(fd, 96, 0).split()
            self._last[tid] = (int(fields[0]), int(fields[1]))
        except (OSError, ValueError, IndexError):  # the thread ended: its last reading stands
            os.close(self._files.pop(tid))
            self._ended[tid] = self._last.get(tid, (0, 0))[1]
        return self._last.get(tid, (0, 0))

    def sample(self) -> Sample:
        """Now: the wall clock, the step thread's CPU time (its own clock: schedstat's runtime moves only at
        scheduler ticks), and every thread's time waiting for a CPU (which the kernel adds as each wait ends)."""
        return self._reading()[0]

    def boundary(self) -> tuple[Sample, Sample]:
        """The readings that end one step and start the next: one reading, unless the step thread waited for a CPU
        while it was read. Reading a thread's CPU clock runs the scheduler's accounting, which can find the thread's
        time slice spent and hand its CPU to other work, so beside other work a wait often begins right there: read
        once, it counted in one step's wait and the next step's wall, and a stretched step looked clean and blocked.
        That wait lies between two timed steps (``measure.harness.StepTimer``), so it counts in neither: the step
        ends at the reading before it and the next starts at one after."""
        end, still = self._reading()
        start = end
        for _ in range(3):  # each wait leaves the thread a fresh slice: a second one within a reading is rare
            if still:
                break
            start, still = self._reading()
        return end, start

    def _reading(self) -> tuple[Sample, bool]:
        """A reading (``sample``), its step thread's wait read before its clocks, and whether that wait held still
        until the reading ended."""
        if self.method != SCHEDSTAT:
            return Sample(time.perf_counter_ns(), time.thread_time_ns(), 0, 0), True
        main = self._files.get(self.main)
        before = 0 if main is None else self._read(self.main, main)[1]
        wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
        others = 0
        for tid, fd in list(self._files.items()):
            if tid != self.main:
                others += self._read(tid, fd)[1]
        after = before if main is None else self._read(self.main, main)[1]
        return Sample(wall, cpu, before, others + sum(self._ended.values())), after == before

    def close(self) -> None:
        for fd in self._files.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._files.clear()


class StepAccount:
    """A ``StepTimer`` after-step hook that samples the clock at every step boundary.

    ``start`` takes the reading before the first step; each call afterwards ends a step. ``steps`` are
    (wall, main thread on a CPU, main thread waiting, other threads waiting) per step, in ns.
    """

    def __init__(self, clock: ThreadClock | None = None) -> None:
        self.clock = clock or ThreadClock()
        self.steps: list[tuple[int, int, int, int]] = []
        self._previous: Sample | None = None

    def start(self) -> None:
        self.clock.refresh()
        self._previous = self.clock.boundary()[1]

    def __call__(self) -> None:
        end, start = self.clock.boundary()
        if self._previous is not None:
            p = self._previous
            self.steps.append((end.wall_ns - p.wall_ns, end.main_cpu_ns - p.main_cpu_ns,
                               end.main_wait_ns - p.main_wait_ns, end.others_wait_ns - p.others_wait_ns))  # fmt: skip
        self._previous = start


@dataclasses.dataclass(frozen=True)
class MachineLoad:
    """What else the machine did while some steps ran."""

    pressure_pct: float | None  # PSI's share of the time some task waited for a CPU; None without PSI
    other_work_pct: (
        float | None
    )  # CPU time of every other process (and the hypervisor's steal), in % of the machine's; None: window too short
    load_average: float | None
    cpus: int | None = None  # the machine's


class MachineGauge:
    """The machine's load from when it was made to when it is read (see ``MachineLoad``)."""

    def __init__(self) -> None:
        self.start = (cpu_pressure_us(), busy_ticks(), family_cpu_s(), time.perf_counter_ns())

    def read(self) -> MachineLoad:
        pressure, busy, own, wall = cpu_pressure_us(), busy_ticks(), family_cpu_s(), time.perf_counter_ns()
        p0, b0, o0, w0 = self.start
        wall_s = max(1e-9, (wall - w0) / 1e9)
        pct = None if pressure is None or p0 is None else 100.0 * (pressure - p0) / 1e6 / wall_s
        others = None
        if busy is not None and b0 is not None and wall_s * (os.cpu_count() or 1) * TICKS_PER_S >= MIN_GAUGE_TICKS:
            others_s = (busy - b0) / TICKS_PER_S - (own - o0)
            others = max(0.0, 100.0 * others_s / (wall_s * (os.cpu_count() or 1)))
        return MachineLoad(pct, others, load_average(), os.cpu_count())


TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# /proc/stat and os.times() count whole clock ticks, so the other-work figure can be two ticks off: over
# fewer than this many ticks of the machine's CPUs (0.2 s on 2 CPUs) it is not given, rather than a
# microsecond step's window reading "other work took 700%" on a quiet machine.
MIN_GAUGE_TICKS = 40


def busy_ticks() -> int | None:
    """Every CPU's busy time since boot, in clock ticks: user, nice, system, interrupts and steal (/proc/stat)."""
    try:
        with open("/proc/stat", encoding="ascii") as stream:
            fields = stream.readline().split()
    except OSError:
        return None
    # cpu user nice system idle iowait irq softirq steal guest guest_nice (guest time is within user)
    user, nice, system, _, _, irq, softirq, steal = (int(value) for value in fields[1:9])
    return user + nice + system + irq + softirq + steal


def family_cpu_s() -> float:
    """The CPU time of this process and of the processes it started, in seconds: its threads', its children's
    that ended (``os.times``) and every live descendant's (``/proc/<pid>/stat``, with the children each reaped)."""
    usage = os.times()
    return usage.user + usage.system + usage.children_user + usage.children_system + descendants_ticks() / TICKS_PER_S


def descendants_ticks(root: int | None = None) -> int:
    """The CPU time of every live descendant of ``root`` (this process), in clock ticks; 0 without /proc."""
    parents: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    with open(f"/proc/{name}/stat", "rb") as stream:
                        fields = stream.read().rpartition(b")")[2].split()
                    # after the name: state ppid ... utime stime cutime cstime (fields 14 to 17 of proc(5))
                    parents.setdefault(int(fields[1]), []).append(int(name))
                    ticks[int(name)] = sum(int(value) for value in fields[11:15])
    found, waiting = 0, list(parents.get(os.getpid() if root is None else root, ()))
    while waiting:
        pid = waiting.pop()
        found += ticks.get(pid, 0)
        waiting += parents.get(pid, ())
    return found


def cpu_pressure_us() -> int | None:
    """The kernel's running total of microseconds some task waited for a CPU; None without PSI."""
    try:
        with open(PSI_CPU, encoding="ascii") as stream:
            some = stream.readline().split()
    except OSError:
        return None
    return int(some[-1].partition("=")[2]) if some and some[0] == "some" else None


def cpu_share(processes: int) -> int:
    """The intra-op threads a process takes unless told, where ``processes`` run on this machine at once: its
    share of the CPUs it may use. One process takes them all, as torch's own default does; each of a node's
    DDP ranks takes its part, so the ranks together ask no more of the machine than one process."""
    return max(1, len(os.sched_getaffinity(0)) // max(1, processes))


BUSY_PRESSURE_PCT = 10.0  # PSI's avg10 above which the machine counts as busy before a sweep starts


def busy_machine(threads: int) -> str | None:
    """Why the machine is too busy for ``threads`` intra-op threads a case to run undisturbed, or None.

    Busy: fewer idle CPUs than the case's threads (by the 1-minute load average), or CPU pressure (PSI's
    10-second average) above BUSY_PRESSURE_PCT.
    """
    cpus, load = os.cpu_count() or 1, load_average()
    try:
        with open(PSI_CPU, encoding="ascii") as stream:
            pressure: float | None = float(stream.readline().split()[1].partition("=")[2])
    except (OSError, ValueError, IndexError):
        pressure = None
    if (load is None or load + threads <= cpus) and (pressure is None or pressure <= BUSY_PRESSURE_PCT):
        return None
    # Only what made it busy: a pressure of 0% beside a high load average reads as a contradiction.
    shown = [f"load average {load:.1f} on {cpus} CPUs, {threads} threads a case"] if load is not None and load + threads > cpus else []
    shown += [f"CPU pressure {pressure:.0f}%"] if pressure is not None and pressure > BUSY_PRESSURE_PCT else []
    return ", ".join(shown)


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None
