#!/usr/bin/env python3
"""gfx_fake_term.py — a terminal that answers petrel's graphics probe.

usage: gfx_fake_term.py PROFILE OUT -- COMMAND...

Runs COMMAND on a new pty of 80x24 cells (800x480 pixels in TIOCGWINSZ),
answers the probe's queries as PROFILE would, records every byte COMMAND
writes to OUT and exits with COMMAND's status. Profiles (replies as the
real terminals send them, see tests/test_gfx_reply.c):
  xterm   xterm -ti vt340: DA1 with 4, XTSMGRAPHICS 16 registers, CSI 16t 6x13
  kitty   kitty: graphics query OK, XTVERSION, CSI 16t 10x20, DA1 without 4
  iterm2  WezTerm: XTVERSION WezTerm, DA1 with 4 (iTerm2 wins the ladder)
  split   xterm's replies one byte at a time, 2 ms apart
  silent  answers nothing (the probe must give up at its timeout)
Used by test_gfx_show.sh (the name keeps it out of the test glob).
"""
import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time

REPLIES = {
    "xterm": {
        b"\033[?1;1;0S": b"\033[?1;0;16S",
        b"\033[?2;1;0S": b"\033[?2;0;800;480S",
        b"\033[16t": b"\033[6;13;6t",
        b"\033[c": b"\033[?63;1;2;4;6;9;15;16;22;28c",
    },
    "kitty": {
        b"\033_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\033\\": b"\033_Gi=31;OK\033\\",
        b"\033[>0q": b"\033P>|kitty(0.26.5)\033\\",
        b"\033[16t": b"\033[6;20;10t",
        b"\033[c": b"\033[?62;c",
    },
    "iterm2": {
        b"\033[?1;1;0S": b"\033[?1;0;256S",
        b"\033[>0q": b"\033P>|WezTerm 20220408-101518-b908e2dd\033\\",
        b"\033[c": b"\033[?65;4;6;18;22c",
    },
    "silent": {},
}
REPLIES["split"] = REPLIES["xterm"]


def main():
    profile, out_path = sys.argv[1], sys.argv[2]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        # answering terminals end the probe with DA1: a long timeout costs
        # nothing and a loaded machine cannot turn a slow answer into a
        # wrong protocol (an explicit PETREL_PROBE_TIMEOUT_MS still wins)
        if profile != "silent":
            os.environ.setdefault("PETREL_PROBE_TIMEOUT_MS", "60000")
        os.execvp(cmd[0], cmd)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 800, 480))
    seen = b""      # what the command wrote, to find the queries in
    answered = 0    # how far into `seen` the queries were answered
    with open(out_path, "wb") as out:
        while True:
            try:
                r, _, _ = select.select([fd], [], [], 10)
            except InterruptedError:
                continue
            if not r:
                break
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the command is gone
                break
            if not data:
                break
            out.write(data)
            seen += data
            # answer each query once, in the order they were written
            while True:
                hits = [(seen.find(q, answered), q) for q in REPLIES[profile]]
                hits = [(i, q) for i, q in hits if i >= 0]
                if not hits:
                    break
                i, q = min(hits)
                reply = REPLIES[profile][q]
                if profile == "split":
                    for b in reply:
                        os.write(fd, bytes([b]))
                        time.sleep(0.002)
                else:
                    os.write(fd, reply)
                answered = i + len(q)
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode")
             else (status >> 8))


if __name__ == "__main__":
    main()
