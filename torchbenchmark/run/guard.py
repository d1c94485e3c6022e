"""Process control for cases (stdlib only: it runs as a script, before any heavy import): a guard that ends a case's whole process tree, and logs of capped size.

Every child the tool starts (a case's worker, a plug-in probe) runs under a *guard*: the child's
first process forks the real work and stays behind as a Linux child subreaper, so every descendant,
including one that starts a new session or is orphaned, stays in its tree. The guard ends that tree
when the work ends, when it is sent SIGTERM (a timeout, or the sweep stopping), and when the process
that started it dies, even by SIGKILL (``PR_SET_PDEATHSIG``); the work itself dies with its guard.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import select
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PARENT_PID_ENV = "TORCHBENCHMARK_PARENT_PID"  # the pid a guard must die with; read once at its start

# A case's log keeps its first and last LOG_HEAD_BYTES + LOG_TAIL_BYTES; what lies between is cut,
# and a line in its place says how many bytes were cut.
LOG_HEAD_BYTES = 1 << 20
LOG_TAIL_BYTES = 1 << 20
RECENT_BYTES = 1 << 16
GUARD_GRACE_S = 5.0  # how long a guard has to end its tree after SIGTERM before it is killed itself
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)

_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> None:
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl({option}): {os.strerror(error)}")


def die_with_parent(signum: int, parent_pid: int) -> None:
    """Have the kernel send ``signum`` to this process when ``parent_pid``, its parent, dies."""
    _prctl(PR_SET_PDEATHSIG, signum)
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os.kill(os.getpid(), signum)


def descendants(pid: int) -> list[int]:
    """Every living (not zombie) descendant of ``pid``, found through each process's parent in /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="utf-8", errors="replace") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except OSError:  # it ended while we looked
            continue
        if fields[0] not in ("Z", "X"):
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_descendants(pid: int) -> None:
    """SIGKILL every descendant of ``pid`` until none is left (a process may fork while we look)."""
    for _ in range(100):
        found = descendants(pid)
        if not found:
            return
        for child in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(child, signal.SIGKILL)
        if pid == os.getpid():
            _reap()


def _reap() -> None:
    """Collect every child of this process that has ended (as a subreaper, orphans become ours)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


class _Stop(BaseException):
    def __init__(self, signum: int) -> None:
        self.signum = signum


def supervise(work: Callable[[], int]) -> NoReturn:
    """Run ``work()`` in a forked child while this process guards its tree; exit as the child did."""
    parent = int(os.environ.pop(PARENT_PID_ENV, os.getppid()))
    die_with_parent(signal.SIGTERM, parent)  # the SIGTERM handler below ends the tree
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    guard = os.getpid()
    child = os.fork()
    if child == 0:
        _run_work(work, guard)
    caught: list[int] = []

    def stop(signum: int, _frame: Any) -> None:
        raise _Stop(signum)

    for signum in _STOP_SIGNALS:
        signal.signal(signum, stop)
    try:
        status = _wait_for(child)
    except _Stop as stopped:
        caught.append(stopped.signum)
        status = None
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    kill_descendants(guard)  # whatever the work left running, detached or not
    _reap()
    if status is None:
        os._exit(128 + caught[0])
    if os.WIFSIGNALED(status):  # die of the same signal, so the caller sees how the work ended
        signum = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP have no handler to reset
            signal.signal(signum, signal.SIG_DFL)
        os.kill(guard, signum)
    os._exit(os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 1)


def _run_work(work: Callable[[], int], guard: int) -> NoReturn:
    code = 1
    try:
        die_with_parent(signal.SIGKILL, guard)
        code = work()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
    os._exit(code)


def _wait_for(child: int) -> int:
    """The wait status of ``child``, collecting any orphan that ends meanwhile."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            return status


def spawn(
    module: str, args: Sequence[str], env: Mapping[str, str], stdout: int | IO[Any], stderr: int | IO[Any]
) -> subprocess.Popen[bytes]:
    """Run ``python -m module *args`` under a guard, in its own session, to die with this process.

    The guard is this file run as a script: it imports nothing but the standard library, so it
    forks before the module's heavy imports and stays small.
    """
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), module, *args],
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        env={**env, PARENT_PID_ENV: str(os.getpid())},
        start_new_session=True,
    )


def end(process: subprocess.Popen[Any], grace_s: float = GUARD_GRACE_S) -> None:
    """End a guarded child and its whole tree: SIGTERM to the guard, then SIGKILL to what is left."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace_s)
    if process.poll() is None:  # a guard that did not answer: its tree, as far as it can still be found
        kill_descendants(process.pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


class CappedLog:
    """Copy a pipe into a binary stream, keeping its first ``head_bytes`` and last ``tail_bytes``.

    Reading goes on while writing fails (a full disk), so the writer never blocks; the first
    write error is kept in ``error``. :meth:`close` writes the kept tail after a line saying how
    many bytes were cut.
    """

    def __init__(
        self,
        sink: IO[bytes],
        head_bytes: int = LOG_HEAD_BYTES,
        tail_bytes: int = LOG_TAIL_BYTES,
        watch: Callable[[bytes], None] | None = None,
    ) -> None:
        self.sink = sink
        self.watch = watch  # sees every chunk read from the pipe, before any is cut
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.written = 0
        self.cut = 0
        self.tail = bytearray()
        self.last = bytearray()  # the last RECENT_BYTES of output, kept whole or cut: what ``saw`` searches
        self.error: OSError | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def pipe(self) -> int:
        """The write end of a new pipe whose output this log keeps; close it once a child holds it."""
        read_fd, write_fd = os.pipe()
        self._thread = threading.Thread(target=self._pump, args=(read_fd,), daemon=True)
        self._thread.start()
        return write_fd

    def _pump(self, fd: int) -> None:
        try:
            while True:
                ready, _, _ = select.select([fd], [], [], 0.2)
                if not ready:
                    if self._done.is_set():
                        return
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return
                if self.watch is not None:
                    self.watch(chunk)
                self.write(chunk)
        finally:
            os.close(fd)

    def write(self, data: bytes | str) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8", errors="replace")
        self.last += data
        del self.last[: max(0, len(self.last) - RECENT_BYTES)]
        room = max(0, self.head_bytes - self.written)
        self._put(data[:room])
        self.written += min(room, len(data))
        rest = data[room:]
        if rest:
            self.tail += rest
            if len(self.tail) > 2 * self.tail_bytes:
                excess = len(self.tail) - self.tail_bytes
                del self.tail[:excess]
                self.cut += excess

    def _put(self, data: bytes) -> None:
        if data and self.error is None:
            try:
                self.sink.write(data)
                self.sink.flush()
            except OSError as error:
                self.error = error

    def wait(self, timeout_s: float = 10.0) -> None:
        """Wait for the pipe's writers to be gone (EOF); stop reading after ``timeout_s`` regardless."""
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._done.set()
            self._thread.join()
            self._thread = None

    def close(self) -> None:
        """Write what is kept of the end, after a line saying how much was cut before it."""
        self.wait()
        excess = max(0, len(self.tail) - self.tail_bytes)
        del self.tail[:excess]
        self.cut += excess
        if self.cut:
            self._put(
                f"\n[torchbenchmark] log cut: {self.cut} bytes omitted here; a log keeps its first "
                f"{self.head_bytes} and last {self.tail_bytes} bytes\n".encode()
            )
        self._put(bytes(self.tail))
        self.tail.clear()

    def saw(self, needle: bytes) -> bool:
        """Whether the end of the output holds ``needle`` (a full disk's message, say)."""
        return needle in self.last

    def text(self) -> str:
        """What an in-memory log holds, once closed."""
        assert isinstance(self.sink, io.BytesIO)
        return self.sink.getvalue().decode("utf-8", errors="replace")


def _run_module(module: str, args: list[str]) -> int:
    import runpy

    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.path[0] = os.getcwd()  # as ``python -m`` has it, not this file's folder
    supervise(lambda: _run_module(sys.argv[1], sys.argv[2:]))
