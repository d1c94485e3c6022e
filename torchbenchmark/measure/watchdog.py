"""A block of Python cut short from another thread: an exception raised in it once its time is up."""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def watchdog(seconds: float, raised: type[BaseException]) -> Iterator[None]:
    """``raised`` raised in this thread once ``seconds`` have passed, wherever its Python is (``measure.replay``'s
    deadline is checked at each op; a step that loops in Python until a value changes, a value an op replayed never
    writes, reaches no op and would loop until the case's timeout took every figure the case had measured).

    A timer thread hands this one the exception (``PyThreadState_SetAsyncExc``), which Python raises at its next
    call or loop. Once the block has ended no shot is fired, and one fired as it ended is taken here, never at some
    later line of the caller's. Nothing is withdrawn: withdrawing (``SetAsyncExc`` with NULL) leaves the
    interpreter's eval breaker set, every later call on its slow path.
    """
    target, lock = ctypes.c_ulong(threading.get_ident()), threading.Lock()
    fired: list[bool] = []  # a list, not an Event: reading it here makes no Python call, where a shot could land
    closed: list[bool] = []

    def fire() -> None:
        with lock:
            if not closed:
                fired.append(True)
                ctypes.pythonapi.PyThreadState_SetAsyncExc(target, ctypes.py_object(raised))

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            closed.append(True)
        if fired:
            try:
                for _ in range(2):  # a loop: Python raises a pending shot at its jump back
                    pass
            except raised:
                pass
