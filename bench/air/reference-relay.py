#!/usr/bin/env python3
# The reference air relay as /work/shared/specs/kube-on-oberon.md §2.4 describes it, for bench/air
# to run beside ours (the original qemu/radio/relay.py is not in this checkout): one blocking loop
# over one UDP socket, a peer table keyed by source address, 1-byte 0xFF hellos register, 33-byte
# frames go to every other peer, other sizes are ignored, peers silent for 60 s are forgotten on the
# next datagram, each delivery dropped with probability --loss. No rate limit, no output budget.
# For the bench only: SIGUSR1 prints the deliveries made so far (`delivered N`).
import argparse
import random
import signal
import socket
import sys
import time

HELLO = b"\xff"
FRAME_BYTES = 33
TTL_S = 60.0

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, default=7524)
ap.add_argument("--bind", default="0.0.0.0")
ap.add_argument("--loss", type=float, default=0.0)
ap.add_argument("--verbose", action="store_true")
a = ap.parse_args()

sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind((a.bind, a.port))
print(f"air relay on udp/{sock.getsockname()[1]}" + (f", loss {round(a.loss * 100)}%" if a.loss > 0 else ""), flush=True)
peers = {}
delivered = 0
signal.signal(signal.SIGUSR1, lambda *_: print(f"delivered {delivered}", flush=True))
while True:
    data, src = sock.recvfrom(2048)
    now = time.monotonic()
    for p in [p for p, seen in peers.items() if now - seen > TTL_S]:
        del peers[p]
        print(f"station {p[0]}:{p[1]} gone", flush=True)
    if src not in peers:
        print(f"station {src[0]}:{src[1]} joined", flush=True)
    peers[src] = now
    if data == HELLO or len(data) != FRAME_BYTES:
        continue
    sent = 0
    for p in peers:
        if p == src or (a.loss > 0 and random.random() < a.loss):
            continue
        try:
            sock.sendto(data, p)
            sent += 1
            delivered += 1
        except OSError:
            pass
    if a.verbose:
        print(f"{src[0]}:{src[1]} ch {data[0]} -> {sent} stations", file=sys.stderr, flush=True)
