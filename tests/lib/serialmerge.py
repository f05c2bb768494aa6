#!/usr/bin/env python3
"""Merges an emulator's serial ports into one log, line by line.

    serialmerge.py --out FILE [--idle SEC] [--ready FILE] [--wait SEC] SOURCE...
    serialmerge.py --self-test

Each SOURCE is a file the emulator writes, `file:PATH` (QEMU's `-serial
file:PATH`: QEMU never waits on a file, where a socket that is not read
at once would make its UART retry and drop bytes), read as it grows, or a
listening socket this program owns and the emulator connects to as a
client, `tcp:PORT` (127.0.0.1; Bochs's `mode=socket-client`, whose writes
block until read). A port's bytes are held until its newline and the
whole line is then appended to FILE with one write, so lines of two ports
(the guest's console on COM1, the hypervisor's log on COM2) never tear
each other. A partial line goes out when its port has been idle for --idle
seconds (default 2: a prompt without a newline still shows) and when its
port closes. FILE is written as lines arrive (appended, never buffered), so
that `grep` and `tail -f` see them.

--ready FILE: written (empty) once every socket listens, for the caller
to wait on before it starts the emulator. The program ends when every
socket source has connected and closed (a file source: never), when no
socket has connected within --wait seconds (default 60) of listening (an
emulator that never started), when its parent process ends, or on
SIGTERM; each time after reading the files to their end and writing what
it holds. It reads every socket as soon as it is readable and every file
every 20 ms.
"""
import os
import selectors
import signal
import socket
import sys
import time


class LineMerger:
    """The line logic, apart from sockets (the self-test drives it)."""

    def __init__(self, write, idle):
        self.write = write      # called with whole lines (bytes)
        self.idle = idle
        self.held = {}          # source -> bytes of its unfinished line
        self.last = {}          # source -> time of its last bytes

    def feed(self, src, data, now):
        buf = self.held.get(src, b"") + data
        cut = buf.rfind(b"\n") + 1
        if cut:
            # every whole line of this source at once: one write, and no
            # other source's line can fall between them
            self.write(buf[:cut])
        self.held[src] = buf[cut:]
        self.last[src] = now

    def close(self, src):
        rest = self.held.pop(src, b"")
        self.last.pop(src, None)
        if rest:
            self.write(rest)

    def tick(self, now):
        """Writes each partial line idle for self.idle seconds; returns
        the seconds until the next one is due (None: none held)."""
        due = None
        for src, buf in self.held.items():
            if not buf:
                continue
            left = self.last[src] + self.idle - now
            if left <= 0:
                self.write(buf)
                self.held[src] = b""
            else:
                due = left if due is None else min(due, left)
        return due


def listen(spec):
    kind, _, where = spec.partition(":")
    if kind == "tcp":
        s = socket.socket(socket.AF_INET)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", int(where)))
    else:
        sys.exit("serialmerge: a source is file:PATH or tcp:PORT, not " + spec)
    s.listen(1)
    s.setblocking(False)
    return s


def run(out, idle, ready, wait, specs):
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(b):
        while b:
            b = b[os.write(fd, b):]

    m = LineMerger(write, idle)
    sel = selectors.DefaultSelector()
    files = {}      # source -> [path, open file or None]
    for i, spec in enumerate(specs):
        if spec.startswith("file:"):
            files[i] = [spec[5:], None]
        else:
            sel.register(listen(spec), selectors.EVENT_READ, ("listen", i))
    nsock = len(specs) - len(files)

    def read_files(now):
        for i, f in files.items():
            if f[1] is None:
                try:
                    f[1] = open(f[0], "rb", buffering=0)
                except FileNotFoundError:
                    continue
            while True:
                data = f[1].read(65536)
                if not data:
                    break
                m.feed(i, data, now)

    if ready:
        open(ready, "w").close()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    parent = os.getppid()
    start = time.monotonic()
    connected = closed = 0
    while not stop and (files or closed < nsock) and os.getppid() == parent:
        now = time.monotonic()
        read_files(now)
        due = m.tick(now)
        if nsock and not connected and now - start > wait:
            break
        timeout = 0.5 if due is None else min(due, 0.5)
        if files:
            timeout = 0.02
        for key, _ in sel.select(timeout):
            what, i = key.data
            now = time.monotonic()
            if what == "listen":
                conn, _ = key.fileobj.accept()
                conn.setblocking(False)
                sel.unregister(key.fileobj)
                key.fileobj.close()
                sel.register(conn, selectors.EVENT_READ, ("data", i))
                connected += 1
                continue
            try:
                data = key.fileobj.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if data:
                m.feed(i, data, now)
            else:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                m.close(i)
                closed += 1
    read_files(time.monotonic())
    for i in range(len(specs)):
        m.close(i)
    os.close(fd)


def self_test():
    out = []
    m = LineMerger(out.append, 2.0)
    fails = passes = 0

    def check(ok, what):
        nonlocal fails, passes
        if not ok:
            print("FAIL: " + what)
        fails += not ok
        passes += ok

    # two ports interleaved byte by byte: each line comes out whole
    a, b = b"GUEST-TEST: REC-EXPECT-VCPU: vcpu=1\r\n", b"hvtrace: interp: vcpu 1: 12 bursts\r\n"
    for i in range(max(len(a), len(b))):
        m.feed(0, a[i:i + 1], 0.0)
        m.feed(1, b[i:i + 1], 0.0)
    check(sorted(out) == sorted([a, b]) and len(out) == 2, "interleaved bytes give whole lines")
    out.clear()
    # several lines in one read: one write, in order
    m.feed(0, b"one\ntwo\nthr", 1.0)
    check(out == [b"one\ntwo\n"], "whole lines of one read written together")
    # the partial line waits while the other port writes lines
    m.feed(1, b"other\n", 1.5)
    check(out[-1] == b"other\n" and m.held[0] == b"thr", "a partial line is held")
    check(m.tick(2.9) is not None and out[-1] == b"other\n", "not before the idle time")
    m.tick(3.1)
    check(out[-1] == b"thr", "written after the idle time")
    m.feed(0, b"ee\n", 4.0)
    check(out[-1] == b"ee\n", "its rest follows on its own")
    # a closing port writes what it holds
    m.feed(1, b"Shell> ", 5.0)
    m.close(1)
    check(out[-1] == b"Shell> ", "a partial line written at close")
    m.close(1)
    check(out[-1] == b"Shell> ", "closing twice writes nothing more")
    check(m.tick(100.0) is None, "nothing held at the end")
    # end to end on two files written byte by byte at once, then SIGTERM
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        f1, f2, out = (os.path.join(d, n) for n in ("com1", "com4", "log"))
        ready = os.path.join(d, "ready")
        p = subprocess.Popen([sys.executable, __file__, "--out", out, "--ready", ready,
                              "file:" + f1, "file:" + f2])
        while not os.path.exists(ready):
            time.sleep(0.01)
        a = b"GUEST-TEST: INFO: REC-SAME-TIME: 00 0123456789abcdef end\r\n" * 20
        b = b"hvtrace: interp: vcpu 1: 388 bursts (20 declined)\r\n" * 20 + b"Shell> "
        with open(f1, "wb", buffering=0) as w1, open(f2, "wb", buffering=0) as w2:
            for i in range(max(len(a), len(b))):
                w1.write(a[i:i + 1])
                w2.write(b[i:i + 1])
                if i % 97 == 0:
                    time.sleep(0.001)
        time.sleep(0.1)
        p.terminate()
        p.wait(10)
        got = open(out, "rb").read()
        lines = got.split(b"\n")
        check(got.count(b"REC-SAME-TIME") == 20 and lines.count(a[:a.index(b"\n")]) == 20,
              "files: every guest line whole")
        check(lines.count(b[:b.index(b"\n")]) == 20 and got.endswith(b"Shell> "),
              "files: every hypervisor line whole, the partial one written at the end")
        check(len(got) == len(a) + len(b), "files: no byte lost or added")
    print("serialmerge: %d passed, %d failed" % (passes, fails))
    return 1 if fails else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    out = ready = None
    idle, wait, specs = 2.0, 60.0, []
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--out":
            out = args.pop(0)
        elif a == "--idle":
            idle = float(args.pop(0))
        elif a == "--ready":
            ready = args.pop(0)
        elif a == "--wait":
            wait = float(args.pop(0))
        else:
            specs.append(a)
    if not out or not specs:
        sys.exit(__doc__)
    run(out, idle, ready, wait, specs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
