#!/usr/bin/env python3
"""build/wick's prompt, driven through a pseudo-terminal as a person would use it.

usage: python3 tests/repl_test.py build/wick
Every wait has a timeout, so a hung prompt fails the test instead of CI.
Exits 77 (skipped in ctest) where no pseudo-terminal can be opened.
"""
import os
import pty
import re
import select
import signal
import sys
import tempfile
import time

WICK = sys.argv[1] if len(sys.argv) > 1 else "build/wick"
TIMEOUT = 20.0


class Prompt:
    def __init__(self, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(WICK, [WICK], env)
        self.raw = b""  # everything read
        self.out = ""  # the same, \r and terminal escapes removed
        self.pos = 0   # where the next expect() looks from

    def send(self, text):
        os.write(self.fd, text.encode())

    def expect(self, pattern, timeout=TIMEOUT):
        """Reads until `pattern` appears after the last match; returns the match."""
        deadline = time.time() + timeout
        rx = re.compile(pattern)
        while True:
            m = rx.search(self.out, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError("timed out waiting for %r; output so far:\n%r" % (pattern, self.out[self.pos:]))
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    data = os.read(self.fd, 4096)
                except OSError:  # EIO: the child closed the terminal
                    data = b""
                if not data:
                    raise AssertionError("wick exited while waiting for %r; output:\n%s" % (pattern, self.out[self.pos:]))
                self.raw += data
                # what a person would see, roughly: libedit redraws with cursor
                # moves (ESC [ ... G) and rings the bell on an ambiguous Tab (BEL): dropped here
                text = self.raw.decode(errors="replace").replace("\r", "")
                self.out = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x07", "", text)

    def line(self, text, pattern):
        """Types a line at the prompt and waits for `pattern`, then for the next prompt."""
        self.expect(r"(^|\n)> $|> $")
        self.send(text + "\n")
        m = self.expect(pattern)
        return m

    def wait_exit(self, timeout=TIMEOUT):
        deadline = time.time() + timeout
        while time.time() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return status
            try:  # drain, so the child never blocks on a full terminal
                r, _, _ = select.select([self.fd], [], [], 0.1)
                if r:
                    os.read(self.fd, 4096)
            except OSError:
                pass
        os.kill(self.pid, signal.SIGKILL)
        raise AssertionError("wick did not exit")


def main():
    tmp = tempfile.mkdtemp()
    hist = os.path.join(tmp, "history")
    env = dict(os.environ, WICK_HISTORY=hist, TERM="xterm", HOME=tmp)
    try:
        p = Prompt(env)
    except OSError as e:
        print("skipped: no pseudo-terminal (%s)" % e)
        return 77
    checks = []

    def check(name, fn):
        fn()
        checks.append(name)
        print("ok -", name)

    try:
        check("expression prints its value", lambda: p.line("1+1", r"\n2\n"))
        check("tensor prints", lambda: p.line("wick.ones(2, 3)", r"tensor\(\[\[1\., 1\., 1\.\]"))
        check("several results, tab-separated", lambda: p.line("return 1, nil, 'x'", r"\n1\tnil\tx\n"))
        check("statements print nothing", lambda: p.line("y = 5", r"y = 5\n(?=> )"))
        check("table summary",
              lambda: p.line("{a = 1, b = wick.zeros(2, 3)}", r"\{a = 1, b = <tensor float32 \[2, 3\]>\}"))

        def multiline():
            p.expect(r"> $")
            p.send("function sq(v)\n")
            p.expect(r">> $")
            p.send("return v * v\n")
            p.expect(r">> $")
            p.send("end\n")
            p.line("sq(7)", r"\n49\n")
        check("multi-line definition continues with >>", multiline)

        def error():
            p.line("error('boom')", r"stdin:1: boom")
            p.line("nil + 1", r"attempt to perform arithmetic")
            p.line("1+2", r"\n3\n")
        check("errors print, the prompt continues", error)

        def complete():
            p.expect(r"> $")
            p.send("wick.linsp\t")
            p.expect(r"wick\.linspace")
            p.send("(0, 1, 2)\n")
            p.expect(r"tensor\(\[0\., 1\.\]\)")
            p.line("t = wick.ones(1)", r"ones\(1\)\n(?=> )")
            p.expect(r"> $")
            p.send("t:nume\t")
            p.expect(r"numel")
            p.send("()\n")
            p.expect(r"\n1\n")
        check("Tab completes wick.* names and tensor methods", complete)

        def ctrl_c_prompt():
            p.expect(r"> $")
            p.send("half a line")
            time.sleep(0.2)
            p.send("\x03")
            p.line("40+2", r"\n42\n")
        check("Ctrl-C at the prompt drops the line", ctrl_c_prompt)

        def ctrl_c_lua():
            p.expect(r"> $")
            p.send("while true do end\n")
            time.sleep(0.5)
            p.send("\x03")
            p.expect(r"interrupted")
            p.line("1+3", r"\n4\n")
        check("Ctrl-C stops a pure Lua loop", ctrl_c_lua)

        def ctrl_c_ops():
            p.line("x = wick.zeros(1000)", r"zeros\(1000\)\n(?=> )")
            p.send("for i = 1, 1e9 do x = x + 1 end\n")
            time.sleep(1.0)
            p.send("\x03")
            p.expect(r"interrupted")
            p.line("x:sum():item() > 0", r"\ntrue\n")
            p.line("(wick.ones(3) + 1):sum():item()", r"\n6\n")
        check("Ctrl-C stops a loop of wick ops", ctrl_c_ops)

        def ctrl_c_big_ops():
            # ops big enough to run in pieces: the op sees the interrupt first
            # and fails; the prompt's hook must not fire again inside the error
            # handler (that printed "error in error handling")
            p.line("big = wick.zeros(1e6)", r"zeros\(1e6\)\n(?=> )")
            for _ in range(3):
                p.expect(r"> $")
                p.send("for i = 1, 1e9 do local y = big + 1 end\n")
                time.sleep(0.5)
                p.send("\x03")
                m = p.expect(r"\n(stdin:1: interrupted|error in error handling)")
                assert m.group(1) == "stdin:1: interrupted", "got %r" % m.group(1)
            p.line("(big + 2):sum():item()", r"\n2000000\n")
        check("Ctrl-C in a loop of big ops says interrupted, at the line", ctrl_c_big_ops)

        def ctrl_c_compiled():
            # a function defined at the prompt is JIT-compiled, where no Lua hook
            # runs: the op's own check of the interrupt flag stops it
            p.line("function grow(n) for i = 1, n do x = x + 1 end end", r"end end\n(?=> )")
            p.expect(r"> $")
            p.send("grow(1e9)\n")
            time.sleep(1.0)
            p.send("\x03")
            p.expect(r"interrupted")
            p.line("1+5", r"\n6\n")
        check("Ctrl-C stops a compiled loop of wick ops", ctrl_c_compiled)

        def ctrl_d():
            p.expect(r"> $")
            p.send("\x04")
            status = p.wait_exit()
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "exit status %r" % status
        check("Ctrl-D exits with status 0", ctrl_d)

        def history():
            with open(hist) as f:
                text = f.read()
            assert "1+1" in text and "sq(7)" in text, "history file:\n" + text
            # consecutive duplicates are stored once
            q = Prompt(env)
            for _ in range(3):
                q.line("7*6", r"\n42\n")
            q.expect(r"> $")
            q.send("\x1b[A\n")  # up arrow: the last line comes back
            q.expect(r"\n42\n")
            q.expect(r"> $")
            q.send("\x04")
            q.wait_exit()
            with open(hist) as f:
                text = f.read()
            assert text.count("7*6") == 1, "history file:\n" + text
        check("history in $WICK_HISTORY, deduplicated, recalled", history)
    except AssertionError as e:
        print("FAIL:", e)
        try:
            os.kill(p.pid, signal.SIGKILL)
        except OSError:
            pass
        return 1
    print("all %d checks passed" % len(checks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
