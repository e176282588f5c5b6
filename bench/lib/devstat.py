"""The block device's own counters around a benchmark run (imported by bench scripts).

    with DeviceWatch(path) as w:
        run the tool
    w.result  # a dict, or None when the path is not on a block device

From /sys/block/DEV/stat (before and after: requests completed, merged, sectors, the time
requests spent in the block layer, the time the device was busy) and /sys/block/DEV/inflight
(sampled every 10 ms: requests the driver holds). For a partition, the counters of the
partition and the in-flight of its disk. Linux's Documentation/block/stat.rst defines them.
"""
import os
import threading
import time


def block_device(path):
    """The /sys/class/block folder of the device that holds path, or None (tmpfs, overlay)."""
    st = os.stat(path)
    folder = f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    if not os.path.exists(folder):
        return None
    return os.path.realpath(folder)


def read_stat(folder):
    with open(os.path.join(folder, "stat")) as f:
        return [int(x) for x in f.read().split()]


def inflight_file(folder):
    own = os.path.join(folder, "inflight")
    if os.path.exists(own) and not os.path.exists(os.path.join(folder, "partition")):
        return own
    return os.path.join(os.path.dirname(folder), "inflight")


class DeviceWatch:
    """Counts what reached the device while the `with` block ran."""

    def __init__(self, path, sample_s=0.01):
        self.folder = block_device(path)
        self.sample_s = sample_s
        self.result = None

    def __enter__(self):
        if self.folder is None:
            return self
        self.samples = []
        self.stop = threading.Event()
        self.inflight = inflight_file(self.folder)
        self.before = read_stat(self.folder)
        self.start = time.monotonic()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self):
        while not self.stop.is_set():
            with open(self.inflight) as f:
                reads, writes = (int(x) for x in f.read().split())
            self.samples.append(reads + writes)
            self.stop.wait(self.sample_s)

    def __exit__(self, *exc):
        if self.folder is None:
            return False
        self.stop.set()
        self.thread.join()
        after = read_stat(self.folder)
        d = [b - a for a, b in zip(self.before, after)]
        reads, merges, sectors, read_ms = d[0], d[1], d[2], d[3]
        writes, busy_ms, queue_ms = d[4], d[9], d[10]
        busy = [s for s in self.samples if s > 0]
        self.result = {
            "device": os.path.basename(self.folder),
            "reads": reads,
            "read_merges": merges,
            # Writes during a read benchmark: the tool's own files (results) or another
            # process's; many of them mean a disturbed run.
            "writes": writes,
            "kib_per_read": sectors * 512 / 1024 / reads if reads else 0.0,
            # Mean time a read spent from entering the block layer to completion, ms.
            "ms_per_read": read_ms / reads if reads else 0.0,
            # Requests in the block layer while the device was busy (time in queue over busy time).
            "queue_when_busy": queue_ms / busy_ms if busy_ms else 0.0,
            # Requests the driver held, sampled while it held any.
            "at_driver": sum(busy) / len(busy) if busy else 0.0,
            "busy_share": busy_ms / ((time.monotonic() - self.start) * 1000),
        }
        return False


def describe(r, tool_ios):
    """One line of the counters, with the device's reads per I/O the tool counted."""
    if r is None:
        return "no block device"
    per_io = r["reads"] / tool_ios if tool_ios else 0.0
    return (f"{r['device']}: {r['reads']} reads ({per_io:.3f} per counted I/O, ramp included),"
            f" {r['kib_per_read']:.1f} KiB each, {r['read_merges']} merged,"
            f" {r['ms_per_read']:.2f} ms each in the block layer, {r['queue_when_busy']:.1f} queued"
            f" and {r['at_driver']:.1f} at the driver while busy"
            + (f"; {r['writes']} writes (the tool's own files or another process)" if r["writes"] else ""))
