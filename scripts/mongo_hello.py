#!/usr/bin/env python3
"""Checks that a MongoDB wire-protocol server answers, using only the standard library.

mongo_hello.py HOST PORT [--roundtrip]
Sends an OP_MSG `hello` and exits 0 if the reply has ok: 1. With --roundtrip it also inserts a
document into storlab_selftest.roundtrip, finds it again and drops the collection.
"""
import socket
import struct
import sys

OP_MSG = 2013


def enc(doc):
    out = b""
    for k, v in doc.items():
        key = k.encode() + b"\0"
        if isinstance(v, bool):
            out += b"\x08" + key + (b"\x01" if v else b"\x00")
        elif isinstance(v, int):
            out += b"\x10" + key + struct.pack("<i", v)
        elif isinstance(v, str):
            s = v.encode() + b"\0"
            out += b"\x02" + key + struct.pack("<i", len(s)) + s
        elif isinstance(v, dict):
            out += b"\x03" + key + enc(v)
        elif isinstance(v, list):
            out += b"\x04" + key + enc({str(i): x for i, x in enumerate(v)})
        else:
            raise TypeError(type(v))
    return struct.pack("<i", len(out) + 5) + out + b"\0"


FIXED = {1: 8, 7: 12, 8: 1, 9: 8, 10: 0, 16: 4, 17: 8, 18: 8, 19: 16, 127: 0, 255: 0}


def dec(b, i=0):
    end = i + struct.unpack_from("<i", b, i)[0] - 1
    i += 4
    doc = {}
    while i < end:
        t = b[i]
        j = b.index(b"\0", i + 1)
        key, i = b[i + 1:j].decode(), j + 1
        if t in FIXED:
            n = FIXED[t]
            raw = b[i:i + n]
            doc[key] = {1: lambda r: struct.unpack("<d", r)[0], 8: lambda r: r != b"\0",
                        16: lambda r: struct.unpack("<i", r)[0],
                        18: lambda r: struct.unpack("<q", r)[0]}.get(t, lambda r: r)(raw)
            i += n
        elif t in (2, 13, 14):
            n = struct.unpack_from("<i", b, i)[0]
            doc[key] = b[i + 4:i + 3 + n].decode()
            i += 4 + n
        elif t in (3, 4):
            doc[key] = dec(b, i)
            i += struct.unpack_from("<i", b, i)[0]
        elif t == 5:
            i += 5 + struct.unpack_from("<i", b, i)[0]
        else:
            raise ValueError("BSON type %d not handled" % t)
    return doc


def command(sock, body, req=[0]):
    req[0] += 1
    payload = struct.pack("<I", 0) + b"\0" + enc(body)
    sock.sendall(struct.pack("<iiii", 16 + len(payload), req[0], 0, OP_MSG) + payload)
    head = recv(sock, 16)
    length, _, _, op = struct.unpack("<iiii", head)
    rest = recv(sock, length - 16)
    if op != OP_MSG or rest[4] != 0:
        raise ValueError("unexpected reply opcode %d" % op)
    reply = dec(rest, 5)
    if reply.get("ok") != 1:
        raise ValueError("command %s failed: %s" % (next(iter(body)), reply))
    return reply


def recv(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by server")
        buf += chunk
    return buf


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    with socket.create_connection((host, port), timeout=5) as s:
        hello = command(s, {"hello": 1, "$db": "admin"})
        print("hello ok: maxWireVersion=%s" % hello.get("maxWireVersion"))
        if "--roundtrip" in sys.argv[3:]:
            db, coll = "storlab_selftest", "roundtrip"
            command(s, {"insert": coll, "documents": [{"_id": "k1", "v": "hello"}], "$db": db})
            found = command(s, {"find": coll, "filter": {"_id": "k1"}, "$db": db})
            docs = found["cursor"]["firstBatch"]
            if list(docs.values()) != [{"_id": "k1", "v": "hello"}]:
                raise ValueError("find returned %s" % docs)
            command(s, {"drop": coll, "$db": db})
            print("insert/find ok")


if __name__ == "__main__":
    try:
        main()
    except (OSError, ValueError) as e:
        print("mongo_hello: %s" % e, file=sys.stderr)
        sys.exit(1)
