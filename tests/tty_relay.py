"""tty_relay.py FIFO CMD...: run CMD on a pty of its own, relayed to and
from this terminal (so probes, replies and pictures pass between CMD and
the real terminal), with extra keystrokes read from FIFO: a test drives a
program in a real terminal (xterm under Xvfb) without a keyboard. Exits
with CMD's status."""
import fcntl, os, pty, select, sys, termios, tty
fifo, cmd = sys.argv[1], sys.argv[2:]
sz = fcntl.ioctl(0, termios.TIOCGWINSZ, b"\0" * 8)
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, sz)
    os.execvp(cmd[0], cmd)
old = termios.tcgetattr(0)
tty.setraw(0)
ff = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
try:
    while True:
        r, _, _ = select.select([0, fd, ff], [], [])
        if fd in r:
            try:
                d = os.read(fd, 65536)
            except OSError:
                break
            if not d:
                break
            os.write(1, d)
        if 0 in r:
            os.write(fd, os.read(0, 4096))
        if ff in r:
            os.write(fd, os.read(ff, 4096))
finally:
    termios.tcsetattr(0, termios.TCSADRAIN, old)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8)
