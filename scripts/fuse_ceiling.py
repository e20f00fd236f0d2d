#!/usr/bin/env python3
"""The FUSE device's own ceiling (docs/benchmarks.md, "FUSE device ceiling").

Usage: fuse_ceiling.py DIR [SECONDS] [THREADS]

On a mounted `mvcclab device mount DIR` (unthrottled), writes a 256 MiB file, then
measures with O_DIRECT (no page cache): random reads and random writes of 4, 8 and 16 KiB
(IOPS, THREADS threads, SECONDS each) and sequential 1 MiB reads and writes (MiB/s).
Prints one line per measurement.
"""
import mmap
import os
import random
import sys
import threading
import time

FILE_BYTES = 256 << 20


def run(path, size, write, seconds, threads, sequential=False):
    done = [0] * threads
    stop = time.monotonic() + seconds

    def worker(i):
        fd = os.open(path, os.O_RDWR | os.O_DIRECT)
        buf = mmap.mmap(-1, size)
        buf.write(os.urandom(size))
        rnd = random.Random(i)
        blocks = FILE_BYTES // size
        pos = (i * blocks // threads) % blocks
        n = 0
        while time.monotonic() < stop:
            if sequential:
                off = pos * size
                pos = (pos + 1) % blocks
            else:
                off = rnd.randrange(blocks) * size
            if write:
                os.pwritev(fd, [buf], off)
            else:
                os.preadv(fd, [buf], off)
            n += 1
        done[i] = n
        os.close(fd)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    start = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(done) / (time.monotonic() - start)


def main():
    d = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    path = os.path.join(d, "ceiling.dat")
    with open(path, "wb") as f:
        chunk = os.urandom(1 << 20)
        for _ in range(FILE_BYTES >> 20):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    for size in (4096, 8192, 16384):
        for write in (False, True):
            iops = run(path, size, write, seconds, threads)
            kind = "write" if write else "read"
            print(f"random {kind} {size // 1024} KiB, {threads} threads: {iops:.0f} IOPS ({iops * size / 1048576:.1f} MiB/s)")
    for write in (False, True):
        ops = run(path, 1 << 20, write, seconds, 1, sequential=True)
        kind = "write" if write else "read"
        print(f"sequential {kind} 1 MiB, 1 thread: {ops:.1f} MiB/s")
    os.unlink(path)


if __name__ == "__main__":
    main()
