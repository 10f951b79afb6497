"""Write /proc-shaped snapshot trees for the sampler's unit tests.

The files have the kernel's exact formats (stat, schedstat, wchan, io, fd symlinks, net/tcp, net/dev,
uptime), so the sampler reads them through the same code path it uses on a live /proc.
"""

import os

TCP_HEADER = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
              "inode\n")
DEV_HEADER = ("Inter-|   Receive                                                |  Transmit\n"
              " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop "
              "fifo colls carrier compressed\n")


class FakeProc:
    def __init__(self, root):
        self.root = str(root)
        self._runs = {}  # pid -> (runtime ns, slices) last written
        self.sys_net = os.path.join(self.root, "_sys_net")
        self.pts = os.path.join(self.root, "_pts")
        for d in (self.root, self.sys_net, self.pts, os.path.join(self.root, "net")):
            os.makedirs(d, exist_ok=True)
        self._dev = {"lo": (0, 0)}
        self._segments = (0, 0)  # TCP segments in, out (snmp): a kernel counts them as packets on an interface
        self.uptime(1000.0)
        self.tcp([])
        self.dev({"lo": (0, 0)})

    def _w(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def uptime(self, secs):
        self._w("uptime", f"{secs:.2f} 100.00\n")

    def proc(self, pid, comm, state="S", ppid=1, ticks=0, runtime_ns=0, threads=1, start_ticks=0,
             flags=4194304, wchan="do_select", fds=None, wchar=None, child_ticks=0, cmdline=None, slices=None):
        """One process; call again to change it (a later 'tick'). `child_ticks`: reaped children's CPU.
        `slices`: schedstat's count of times it was put on a CPU; by default one more whenever the runtime moves
        (each run begins with one), as the kernel counts."""
        fields = [state, str(ppid), str(pid), str(pid), "0", "-1", str(flags), "0", "0", "0", "0",
                  str(ticks), "0", str(child_ticks), "0", "20", "0", str(threads), "0", str(start_ticks)] + ["0"] * 32
        if cmdline is not None:
            self._w(f"{pid}/cmdline", "\0".join(cmdline) + "\0")
        self._w(f"{pid}/stat", f"{pid} ({comm}) {' '.join(fields)}\n")
        last = self._runs.get(pid)
        if slices is None:
            slices = 1 if last is None else last[1] + (runtime_ns != last[0])
        self._runs[pid] = (runtime_ns, slices)
        self._w(f"{pid}/schedstat", f"{runtime_ns} 0 {slices}\n")
        self._w(f"{pid}/wchan", wchan)
        if wchar is not None:
            self._w(f"{pid}/io", f"rchar: 0\nwchar: {wchar}\nsyscr: 0\n")
        fddir = os.path.join(self.root, str(pid), "fd")
        os.makedirs(fddir, exist_ok=True)
        if fds is not None:
            for name in os.listdir(fddir):
                os.unlink(os.path.join(fddir, name))
            for n, target in enumerate(fds):
                os.symlink(target, os.path.join(fddir, str(n)))

    def pid_namespace(self, last_pid, nspid=None):
        """This /proc as the reader's own PID namespace's (self/status NSpid: our pid alone, or `nspid`), with
        /proc/loadavg's last pid handed out; call again to move it (written in place, as the kernel's)."""
        self._w("self/status", f"Name:\tpython3\nNSpid:\t{nspid or os.getpid()}\n")
        self._w("loadavg", f"0.10 0.20 0.30 1/123 {last_pid}\n")

    def remove(self, pid):
        import shutil
        shutil.rmtree(os.path.join(self.root, str(pid)))
        self._runs.pop(pid, None)

    def tcp(self, conns, name="tcp"):
        """conns: (state hex, inode) or (state hex, inode, send queue bytes) tuples."""
        lines = [TCP_HEADER]
        for n, (st, inode, *queue) in enumerate(conns):
            tx = queue[0] if queue else 0
            timer = "01:00000020" if tx else "00:00000000"
            ends = "0100007F:1F90 00000000:0000" if st == "0A" else "0100007F:C350 0100007F:1F90"
            lines.append(f"   {n}: {ends} {st} {tx:08X}:00000000 {timer} 00000000     0"
                         f"        0 {inode} 1 0000000000000000 20 4 30 10 -1\n")
        self._w("net/" + name, "".join(lines))

    def snmp(self, in_segs, out_segs, established):
        """/proc/net/snmp's Tcp rows (the other counters zero)."""
        names = ("RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab "
                 "InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors")
        values = ["1", "200", "120000", "-1", "0", "0", "0", "0", str(established), str(in_segs), str(out_segs),
                  "0", "0", "0", "0"]
        self._w("net/snmp", f"Ip: Forwarding\nIp: 1\nTcp: {names}\nTcp: {' '.join(values)}\n")
        self._segments = (in_segs, out_segs)
        self._write_dev()

    def dev(self, counters):
        """/proc/net/dev's byte counts per interface; packets are the TCP segments snmp() gave (on the first)."""
        self._dev = dict(counters)
        self._write_dev()

    def _write_dev(self):
        lines = [DEV_HEADER]
        for i, (name, (rx, tx)) in enumerate(self._dev.items()):
            rp, tp = self._segments if i == 0 else (0, 0)
            lines.append(f"{name:>6}: {rx} {rp} 0 0 0 0 0 0 {tx} {tp} 0 0 0 0 0 0\n")
        self._w("net/dev", "".join(lines))

    def iface(self, name, kind=None):
        d = os.path.join(self.sys_net, name)
        os.makedirs(d, exist_ok=True)
        if kind == "bridge":
            os.makedirs(os.path.join(d, "bridge"), exist_ok=True)
        elif kind == "brport":
            os.makedirs(os.path.join(d, "brport"), exist_ok=True)
        elif kind == "tap":
            self._w(os.path.join("_sys_net", name, "tun_flags"), "0x1002\n")

    def pty(self, n, atime):
        path = os.path.join(self.pts, str(n))
        with open(path, "w"):
            pass
        os.utime(path, (atime, atime))
