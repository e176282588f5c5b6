#!/usr/bin/env python3
"""The HCI cluster's placement daemon and its views (scripts/hci.sh calls these).

  placement.py leaders DIR      exit 0 when every tenant has a running primary
  placement.py redundant DIR    exit 0 when every tenant has a running primary and a streaming
                                synchronous replica on two live nodes and no copy is running
  placement.py status DIR       a line per member, then redundant's verdict
  placement.py hosted DIR NODE  the members NODE hosts, with their roles, on one line
  placement.py leader DIR TENANT  the node of the tenant's primary (empty line if none)
  placement.py daemon DIR HCI   the daemon (HCI: scripts/hci.sh, whose add-member and
                                remove-member it calls): every second it copies a lost member
                                back and, when DIR/balancer enables it, runs the balance policy

The daemon is part of the system under test, as vSAN's resync and DRS are part of the brief's:
- A member on a powered-off node is dropped; a tenant left with one member gets a new replica on
  the live node with the fewest members that does not host it (Patroni copies the primary's
  data with pg_basebackup). When it streams, a span `resync-tT` with the bytes copied (the new
  data directory's size then) goes to DIR/spans.log.
- With DIR/balancer `script EPOCH POLICY` and EPOCH passed, every 2 s it gives POLICY the state
  as JSON on stdin (each node's CPU limit and use over the last period, each tenant's primary,
  replicas and CPU use per node); POLICY prints nothing or `move TENANT NODE`: the tenant's
  primary to NODE. When NODE holds the tenant's replica, a Patroni switchover; else a new
  replica on NODE (pg_basebackup) and both replicas synchronous (synchronous_node_count 2:
  Patroni switches over only to a synchronous standby, and the tenant never has fewer than one
  synchronous copy), then the switchover, then the old primary's member removed. Each move is
  a span `move-tT` with its duration. While a move runs, DIR/placement.moving names it; after
  a move the daemon waits 10 s (the cooldown) before the next. While a move waits, a node lost
  elsewhere is repaired; a move whose source or target node is lost is abandoned.
- With DIR/balancer `pacemaker EPOCH` (scripts/hci/pacemaker.sh: Pacemaker and Corosync in
  every live node, each tenant's primary a resource): it sets each node's utilization capacity
  (DIR/pcmk/full-pct of its CPU limit) and every 5 s each tenant's utilization and priority
  (its primary's CPU demand: CPU time plus time waiting to run, smoothed, at most a node's
  capacity) when it changed by 10% of a node's capacity or more, and each node's room left
  (the node attribute free-cpu: capacity minus its primaries' utilization); once EPOCH has passed it has Pacemaker manage the tenants. Pacemaker decides; a tenant
  it starts on another node (scripts/hci/tenant) asks for a move (below) and the daemon holds
  the utilization for the cooldown after it.
- A file DIR/requests/TENANT naming a node (`hci.sh move`; Pacemaker's tenant agent adds
  "pacemaker" after it, and its requests go when Pacemaker stops) asks for
  the tenant's primary there: the same move, in any balancer mode (after a copy under way);
  one that cannot be made is answered in DIR/requests/TENANT.failed.
- With the Pacemaker balancer, a node Pacemaker fenced (DIR/fencing.log) is powered off
  (`hci.sh power-off`): its data is gone, as after any power loss.
Spans: `span START END NAME [bytes=N] DETAIL` (Unix seconds), read by `scripts/hci.sh watch`.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

PERIOD_S, BALANCE_EVERY_S, COOLDOWN_S, MOVE_TIMEOUT_S = 1.0, 2.0, 10.0, 600.0
# Pacemaker's utilization: how often it is read (seconds), the weight of each new reading in the
# smoothed use, and the change (a share of a node's capacity) below which the CIB is left as it
# is (each change is a new transition for Pacemaker to compute on every node).
PCMK_EVERY_S, PCMK_SMOOTHING, PCMK_CHANGE = 5.0, 0.5, 0.10


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


class Cluster:
    def __init__(self, d):
        self.dir = d
        self.subnet = read(f"{d}/subnet")
        self.hash = read(f"{d}/hash")
        self.nodes = [f"node{i}" for i in range(1, int(read(f"{d}/nodes", "0")) + 1)]
        self.tenants = [f"t{i}" for i in range(1, int(read(f"{d}/tenants", "0")) + 1)]

    def ip(self, node):
        return f"10.214.{self.subnet}.{10 + int(node[4:])}"

    def dcs(self):
        """etcd's address: outside every node (scripts/hci.sh)."""
        return f"10.214.{self.subnet}.10:2379"

    def rest(self, t, node):
        return f"http://{self.ip(node)}:{8000 + int(t[1:])}"

    def live(self, node):
        return not os.path.exists(f"{self.dir}/{node}/off")

    def members(self):
        out = {t: [] for t in self.tenants}
        for line in read(f"{self.dir}/members").splitlines():
            t, node = line.split()
            out.setdefault(t, []).append(node)
        return out


def get(url, timeout=1.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:  # 503 for a replica on "/": still JSON
        try:
            return json.load(e)
        except Exception:
            return None
    except Exception:
        return None


def view(c):
    """Per tenant: its members' own reports (/patroni), the leader, its sync standbys and the
    replicas streaming to it, as the leader sees them."""
    members = c.members()
    pairs = [(t, n) for t, ns in members.items() for n in ns if c.live(n)]
    with ThreadPoolExecutor(max(1, len(pairs))) as ex:
        selves = dict(zip(pairs, ex.map(lambda p: get(c.rest(*p) + "/patroni"), pairs)))
    out = {}
    for t, ns in members.items():
        v = {"members": ns, "self": {n: selves.get((t, n)) for n in ns}, "leader": None,
             "sync": set(), "streaming": set()}
        for n in ns:
            s = v["self"][n]
            if s and s.get("role") in ("master", "primary") and s.get("state") == "running":
                v["leader"] = n
        if v["leader"]:
            top = get(c.rest(t, v["leader"]) + "/") or {}
            cl = get(c.rest(t, v["leader"]) + "/cluster") or {}
            # Member names are tT-NODE; a copy's walsender (pg_basebackup) is not a member.
            v["sync"] = {m["name"][len(t) + 1:] for m in cl.get("members", [])
                         if m.get("role") == "sync_standby" and m["name"].startswith(t + "-")}
            v["streaming"] = {r["application_name"][len(t) + 1:] for r in top.get("replication", [])
                              if r.get("state") == "streaming"
                              and r.get("application_name", "").startswith(t + "-")}
        out[t] = v
    return out


def copying(c):
    return read(f"{c.dir}/placement.copying")


def not_redundant(c, v):
    why = []
    for t, tv in v.items():
        if not tv["leader"]:
            why.append(f"{t}: no primary")
            continue
        ok = [n for n in tv["sync"] & tv["streaming"] if n != tv["leader"] and c.live(n)]
        if not ok:
            why.append(f"{t}: no synchronous replica streaming (primary {tv['leader']})")
    if copying(c):
        why.append(f"copying: {copying(c)}")
    return why


def copied_since_loss(c):
    """The resync spans since the last power-off: bytes and the time they took."""
    offs = [float(read(f"{c.dir}/{n}/off", "0")) for n in c.nodes if not c.live(n)]
    since = max(offs) if offs else 0.0
    total, first, last = 0, None, None
    for line in read(f"{c.dir}/spans.log").splitlines():
        f = line.split()
        if len(f) < 4 or not f[3].startswith("resync-") or float(f[1]) < since:
            continue
        total += next((int(x[6:]) for x in f[4:] if x.startswith("bytes=")), 0)
        first = float(f[1]) if first is None else min(first, float(f[1]))
        last = float(f[2]) if last is None else max(last, float(f[2]))
    if first is None:
        return "no data copied since the last power-off"
    secs = max(last - first, 1e-9)
    return f"copied {total} bytes in {secs:.1f} s ({total / secs / 1e6:.1f} MB/s) since the last power-off"


def cmd_leaders(c):
    v = view(c)
    missing = [t for t, tv in v.items() if not tv["leader"]]
    print(f"{len(v) - len(missing)} of {len(v)} tenants have a primary" + (f" (not: {' '.join(missing)})" if missing else ""))
    return 1 if missing else 0


def cmd_redundant(c, quiet=False):
    v = view(c)
    why = not_redundant(c, v)
    if why:
        print("; ".join(why))
        return 1
    if not quiet:
        print(f"redundant: {len(v)} tenants, each with a primary and a synchronous replica on two live nodes; {copied_since_loss(c)}")
    return 0


def cmd_status(c):
    v = view(c)
    for n in c.nodes:
        print(f"{n} {'live' if c.live(n) else 'powered off'} {c.ip(n)}")
    for t, tv in v.items():
        for n in tv["members"]:
            s = tv["self"].get(n) or {}
            role = "primary" if n == tv["leader"] else ("sync" if n in tv["sync"] else "replica")
            print(f"  {t}-{n} {role} {s.get('state', 'no answer')} streaming={n in tv['streaming']}")
    return cmd_redundant(c)


class Cpu:
    """CPU time of each node's group and each member's (cgroup v1 cpuacct, or v2 cpu.stat)."""

    def __init__(self, c):
        mounts = [l.split() for l in read("/proc/self/mounts").splitlines()]
        acct = [m[1] for m in mounts if m[2] == "cgroup" and "cpuacct" in m[3].split(",")]
        v2 = [m[1] for m in mounts if m[2] == "cgroup2"]
        self.base = f"{(acct or v2 or [''])[0]}/storlab-hci-{c.hash}"
        self.v1 = bool(acct)
        self.last, self.at = {}, time.monotonic()
        self.demand_last, self.demand_at = {}, time.monotonic()

    def usage_s(self, rel):
        if self.v1:
            return int(read(f"{self.base}/{rel}/cpuacct.usage", "0")) / 1e9
        stat = dict(l.split() for l in read(f"{self.base}/{rel}/cpu.stat").splitlines() if l)
        return int(stat.get("usage_usec", 0)) / 1e6

    def demand_rates(self, rels):
        """CPUs each group wanted over the last period (for groups sampled before): its
        threads' CPU time plus their time
        runnable but waiting to run (/proc/TID/schedstat's run_delay, which a node's CPU limit
        adds to while it throttles them), as DRS's demand counts a VM's ready time. A thread
        first seen in a group sampled before counts whole (it started within the period)."""
        now = time.monotonic()
        dt, out = max(now - self.demand_at, 1e-3), {}
        for rel in rels:
            ids = read(f"{self.base}/{rel}/{'tasks' if self.v1 else 'cgroup.threads'}").split()
            seen, last, total = {}, self.demand_last.get(rel), 0
            for tid in ids:
                f = read(f"/proc/{tid}/schedstat").split()
                if len(f) < 2:
                    continue
                seen[tid] = int(f[0]) + int(f[1])
                if last is not None:
                    total += seen[tid] - last.get(tid, 0)
            self.demand_last[rel] = seen
            if last is not None:
                out[rel] = max(0.0, total / 1e9 / dt)
        self.demand_at = now
        return out

    def rates(self, rels):
        now = time.monotonic()
        dt, out = max(now - self.at, 1e-3), {}
        for rel in rels:
            u = self.usage_s(rel)
            out[rel] = max(0.0, (u - self.last.get(rel, u)) / dt)
            self.last[rel] = u
        self.at = now
        return out


class NodeLost(Exception):
    """A node a move involves was lost during it."""


class Daemon:
    def __init__(self, c, hci):
        self.c, self.hci = c, hci
        self.cpu = Cpu(c)
        self.copies = {}  # tenant -> (node, start, detail)
        self.next_balance = 0.0
        self.moved_at = -COOLDOWN_S  # monotonic time of the last requested move
        self.pacemaker = Pacemaker(self)

    def span(self, start, name, detail, bytes_=None):
        b = f" bytes={bytes_}" if bytes_ is not None else ""
        with open(f"{self.c.dir}/spans.log", "a") as f:
            f.write(f"span {start:.3f} {time.time():.3f} {name}{b} {detail}\n")

    def run(self, *args):
        r = subprocess.run([self.hci, *args], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}", flush=True)
        return r.returncode == 0

    def data_bytes(self, t, node):
        total = 0
        for root, _, files in os.walk(f"{self.c.dir}/{node}/disk/{t}"):
            for f in files:
                try:
                    total += os.lstat(os.path.join(root, f)).st_size
                except OSError:
                    pass
        return total

    def repair(self, v):
        c, members = self.c, self.c.members()
        for t, ns in members.items():
            for n in ns:
                if not c.live(n):
                    self.run("remove-member", c.dir, t, n)
                    self.copies.setdefault(t, (None, time.time(), f"lost {n}"))
        members = c.members()
        for t, ns in members.items():
            if t in self.copies and self.copies[t][0] is None and len(ns) >= 2:
                # The member lost was one too many (a move's copy, say): still two copies.
                del self.copies[t]
                continue
            if t in self.copies and self.copies[t][0] is None and v.get(t, {}).get("leader"):
                load = {n: sum(n in m for m in members.values()) for n in c.nodes if c.live(n) and n not in ns}
                if not load:
                    continue
                to = min(load, key=lambda n: (load[n], n))
                start, why = self.copies[t][1], self.copies[t][2]
                if self.run("add-member", c.dir, t, to):
                    self.copies[t] = (to, start, f"{why} -> {to} pg_basebackup")
        for t, (to, start, detail) in list(self.copies.items()):
            if to and to in v.get(t, {}).get("streaming", set()):
                self.span(start, f"resync-{t}", detail, self.data_bytes(t, to))
                del self.copies[t]
        with open(f"{c.dir}/placement.copying", "w") as f:
            f.write(" ".join(f"{t}->{to or '?'}" for t, (to, _, _) in self.copies.items()))

    def wait(self, what, ok, involved=()):
        """Until `ok` holds of the view; meanwhile a node lost elsewhere is repaired (a move
        does not hold up the copies that restore redundancy), and the loss of a node the move
        involves ends it (NodeLost)."""
        end = time.time() + MOVE_TIMEOUT_S
        while time.time() < end:
            v = view(self.c)
            if ok(v):
                return v
            lost = [n for n in involved if not self.c.live(n)]
            if lost:
                raise NodeLost(f"{' '.join(lost)} lost while waiting for {what}")
            self.repair(v)
            time.sleep(0.5)
        raise TimeoutError(what)

    def patroni(self, t, node, path, body, method="POST"):
        req = urllib.request.Request(self.c.rest(t, node) + path, data=json.dumps(body).encode(),
                                     method=method)
        urllib.request.urlopen(req, timeout=30).read()

    def move(self, t, to, v):
        """The tenant's primary to `to`, never with fewer than one synchronous replica: when
        `to` holds no member yet, a new replica there (copied) and both replicas synchronous
        (synchronous_node_count 2) before the switchover; then the old primary's member goes."""
        c, tv, start = self.c, v[t], time.time()
        frm, how, copied = tv["leader"], "switchover", None
        with open(f"{c.dir}/placement.moving", "w") as f:
            f.write(f"{t} {frm}->{to}")
        try:
            if to not in tv["members"]:
                how = "copy+switchover"
                self.patroni(t, frm, "/config", {"synchronous_node_count": 2}, "PATCH")
                if not self.run("add-member", c.dir, t, to):
                    return
                self.wait(f"{t}-{to} synchronous", lambda v: to in v[t]["sync"] and to in v[t]["streaming"], (frm, to))
                copied = self.data_bytes(t, to)
            self.patroni(t, frm, "/switchover", {"leader": f"{t}-{frm}", "candidate": f"{t}-{to}"})
            self.wait(f"{t} primary on {to}", lambda v: v[t]["leader"] == to, (frm, to))
            if how != "switchover":
                self.run("remove-member", c.dir, t, frm)
                self.patroni(t, to, "/config", {"synchronous_node_count": 1}, "PATCH")
                self.sync_names_settle(t, to, f"{t}-{frm}")
                if len(c.members()[t]) < 2:  # its other replica was lost during the move
                    self.copies.setdefault(t, (None, time.time(), f"moved off {frm} with one copy left"))
            self.span(start, f"move-{t}", f"{frm}->{to} {how}", copied)
        except (OSError, urllib.error.URLError) as e:
            print(f"move {t} {frm}->{to}: {e}", flush=True)
        except NodeLost as e:
            # The copy, if any, stays a replica (or is dropped with its node by the repair);
            # one synchronous standby is enough again.
            print(f"move {t} {frm}->{to} abandoned: {e}", flush=True)
            leader = view(c)[t]["leader"]
            if how != "switchover" and leader:
                try:
                    self.patroni(t, leader, "/config", {"synchronous_node_count": 1}, "PATCH")
                except (OSError, urllib.error.URLError) as e2:
                    print(f"move {t}: synchronous_node_count back to 1 on {leader}: {e2}", flush=True)
        finally:
            os.unlink(f"{c.dir}/placement.moving")

    def sync_names_settle(self, t, node, gone):
        """Patroni 3.0 rewrites the primary's synchronous_standby_names only when the standbys
        it picks differ from the DCS's /sync key. Once the old primary rejoined as a replica,
        it may be named there (count 2) before Patroni confirms it in /sync; removed, it stays
        named, and every commit waits for a standby that is gone. Seen in a quick run of 20
        tenants: t3's sessions all stuck behind one commit in SyncRep. When the name is still
        there after 10 s, the /sync key is deleted: Patroni then sets both from the standbys
        streaming (promotion needs the key: none is possible for that loop)."""
        conf = f"{self.c.dir}/{node}/disk/{t}/postgresql.conf"

        def names():
            return next((ln for ln in read(conf).splitlines()
                         if ln.startswith("synchronous_standby_names")), "")

        deadline = time.time() + 10
        while gone in names() and time.time() < deadline:
            time.sleep(0.5)
        if gone not in names():
            return
        key = f"/storlab/storlab-hci-{self.c.hash}-{t}/sync"
        r = subprocess.run(["etcdctl", f"--endpoints=http://{self.c.dcs()}", "del", key],
                           env={**os.environ, "ETCDCTL_API": "3"}, capture_output=True, text=True)
        print(f"move {t}: {names()} still names {gone}: {key} deleted (etcdctl exit {r.returncode})",
              flush=True)

    def members_cpu(self):
        """Each live node's CPU use and each live member's (node/tT), over the last period."""
        c, members = self.c, self.c.members()
        rels = [n for n in c.nodes if c.live(n)] + [f"{n}/{t}" for t, ns in members.items() for n in ns if c.live(n)]
        return self.cpu.rates(rels)

    def balance(self, v):
        mode = read(f"{self.c.dir}/balancer", "none").split()
        if mode and mode[0] == "pacemaker":
            self.pacemaker.step(v, float(mode[1]))
            return
        self.pacemaker.reset()
        if not mode or mode[0] != "script" or time.time() < float(mode[1]) or self.copies:
            return
        if time.monotonic() < self.next_balance:
            return
        self.next_balance = time.monotonic() + BALANCE_EVERY_S
        c, members = self.c, self.c.members()
        use = self.members_cpu()
        state = {"nodes": {n: {"live": c.live(n), "cpus": float(read(f"{c.dir}/cpus")), "cpu-used": use.get(n, 0.0)}
                           for n in c.nodes},
                 "tenants": {t: {"primary": v[t]["leader"],
                                 "replicas": [n for n in ns if n != v[t]["leader"]],
                                 "cpu-used": {n: use.get(f"{n}/{t}", 0.0) for n in ns}}
                             for t, ns in members.items()}}
        r = subprocess.run([" ".join(mode[2:])], input=json.dumps(state), capture_output=True, text=True)
        words = r.stdout.split()
        if r.returncode != 0 or len(words) != 3 or words[0] != "move":
            if r.returncode != 0 or words:
                print(f"policy: exit {r.returncode}, printed {r.stdout.strip()!r}: {r.stderr.strip()}", flush=True)
            return
        t, to = words[1], words[2]
        if t in v and to in c.nodes and c.live(to) and v[t]["leader"] and v[t]["leader"] != to:
            try:
                self.move(t, to, v)
            except TimeoutError as e:
                print(f"move {t} -> {to}: timed out waiting for {e}", flush=True)
            self.next_balance = time.monotonic() + COOLDOWN_S

    def requests(self, v):
        """Moves asked for in DIR/requests (by `hci.sh move` and Pacemaker's tenant agent), one
        at a time; a request that cannot be carried out is answered in TENANT.failed."""
        rdir = f"{self.c.dir}/requests"
        names = sorted(f for f in os.listdir(rdir) if re.fullmatch(r"t\d+", f)) if os.path.isdir(rdir) else []
        for t in names:
            to = (read(f"{rdir}/{t}").split() or [""])[0]  # NODE [by whom]
            if t not in v or not to or os.path.exists(f"{rdir}/{t}.failed") or v[t]["leader"] == to:
                continue
            why = None
            if to not in self.c.nodes or not self.c.live(to):
                why = f"{to} is not a live node"
            elif not v[t]["leader"]:
                why = f"{t} has no primary to move"
            elif self.copies:
                return  # a copy first: the request waits
            else:
                print(f"request: moves {t} {v[t]['leader']}->{to}", flush=True)
                try:
                    self.move(t, to, v)
                except TimeoutError as e:
                    why = f"timed out waiting for {e}"
                self.moved_at = time.monotonic()
                v = view(self.c)
                if not why and v[t]["leader"] != to:
                    why = f"the primary is on {v[t]['leader']} after the move"
            if why:
                with open(f"{rdir}/{t}.failed", "w") as f:
                    f.write(why + "\n")
                print(f"request: move {t} -> {to} failed: {why}", flush=True)
            return

    def loop(self):
        while True:
            t0 = time.monotonic()
            v = view(self.c)
            self.repair(v)
            self.requests(v)
            self.balance(v)
            time.sleep(max(0.0, PERIOD_S - (time.monotonic() - t0)))


class Pacemaker:
    """The daemon's side of `balancer pacemaker`: the CIB's utilization, Pacemaker's move
    requests, and fenced nodes (see the module's doc)."""

    def __init__(self, daemon):
        self.d, self.c = daemon, daemon.c
        self.reset()

    def reset(self):
        self.capacity, self.managed, self.sent, self.smoothed, self.room, self.ids = None, False, {}, {}, {}, {}
        self.next_update = 0.0

    def cib(self, *args):
        return self.d.run("pcmk", self.c.dir, *args)

    def fenced(self):
        """Nodes Pacemaker fenced (fence_storlab_cgroup's log) that are not yet powered off."""
        found = set(re.findall(r"fence (?:off|reboot) (node\d+): killed", read(f"{self.c.dir}/fencing.log")))
        return [n for n in sorted(found) if self.c.live(n)]

    def set_capacity(self):
        pct = int(read(f"{self.c.dir}/pcmk/full-pct", "80"))
        self.capacity = int(float(read(f"{self.c.dir}/cpus")) * 1000 * pct / 100)
        self.ids = self.node_ids()
        for n in self.c.nodes:
            if self.c.live(n):
                self.cib("crm_attribute", "--node", n, "--utilization", "--name", "cpu", "--update", str(self.capacity))
        print(f"pacemaker: each node's capacity {self.capacity} milli-CPUs ({pct}% of its limit)", flush=True)

    def node_ids(self):
        """Each node's id in the CIB (Corosync's node id: it depends on the nodes live at start)."""
        r = subprocess.run([self.d.hci, "pcmk", self.c.dir, "cibadmin", "--query", "--scope", "nodes"],
                           capture_output=True, text=True)
        return dict((n, i) for i, n in re.findall(r'<node id="(\d+)" uname="(node\d+)"', r.stdout))

    def update_utilization(self, v):
        """Each tenant's primary's CPU demand (milli-CPUs, smoothed, 1 to a node's capacity) as its
        utilization and priority, and each node's room left (capacity minus the utilization of
        the primaries it runs) as its attribute free-cpu, each tenant's score there: the changed
        ones in one modification of the CIB, so that Pacemaker never places with the one new and
        the other old. Demand, not use: on a node at its CPU limit, use only shares the limit
        out, whatever the tenants want."""
        c, resources, nodes = self.c, [], []
        rels = [f"{n}/{t}" for t, ns in c.members().items() for n in ns if c.live(n)]
        demand = self.d.cpu.demand_rates(rels)
        for t, tv in v.items():
            if f"{tv['leader']}/{t}" not in demand:
                continue
            now = demand[f"{tv['leader']}/{t}"] * 1000
            s = self.smoothed[t] = PCMK_SMOOTHING * now + (1 - PCMK_SMOOTHING) * self.smoothed.get(t, now)
            value = max(1, min(self.capacity, round(s)))
            if t in self.sent and abs(value - self.sent[t]) < PCMK_CHANGE * self.capacity:
                continue
            self.sent[t] = value
            # The priority orders Pacemaker's placement: the busiest tenants are placed first,
            # each where it runs when it fits, so the least busy of a full node is the one moved.
            resources.append(f'<primitive id="{t}"><utilization id="{t}-utilization">'
                             f'<nvpair id="{t}-utilization-cpu" name="cpu" value="{value}"/></utilization>'
                             f'<meta_attributes id="{t}-meta"><nvpair id="{t}-priority" name="priority" value="{value}"/>'
                             f'</meta_attributes></primitive>')
        room = {n: self.capacity - sum(self.sent.get(t, 0) for t, tv in v.items() if tv["leader"] == n)
                for n in c.nodes if c.live(n) and n in self.ids}
        for n, r in room.items():
            if n not in self.room or abs(r - self.room[n]) >= PCMK_CHANGE * self.capacity:
                i = self.ids[n]
                nodes.append(f'<node id="{i}" uname="{n}"><instance_attributes id="nodes-{i}">'
                             f'<nvpair id="nodes-{i}-free-cpu" name="free-cpu" value="{r}"/></instance_attributes></node>')
        if not resources and not nodes:
            return
        xml = f"<configuration><resources>{''.join(resources)}</resources><nodes>{''.join(nodes)}</nodes></configuration>"
        if self.cib("cibadmin", "--modify", "--xml-text", xml):
            self.room.update(room)
            print("pacemaker: utilization " + " ".join(f"{t}={u}" for t, u in sorted(self.sent.items()))
                  + "; free-cpu " + " ".join(f"{n}={r}" for n, r in sorted(room.items())), flush=True)

    def manage(self):
        parts = [f'<primitive id="{t}"><meta_attributes id="{t}-meta">'
                 f'<nvpair id="{t}-is-managed" name="is-managed" value="true"/></meta_attributes></primitive>'
                 for t in self.c.tenants]
        self.managed = self.cib("cibadmin", "--modify", "--xml-text", f"<resources>{''.join(parts)}</resources>")
        if self.managed:
            print("pacemaker: the tenants are managed: Pacemaker places them from now on", flush=True)

    def step(self, v, epoch):
        if not os.path.exists(f"{self.c.dir}/pcmk/full-pct"):
            return
        for n in self.fenced():
            print(f"pacemaker fenced {n}: powered off", flush=True)
            self.d.run("power-off", self.c.dir, n)
        if self.capacity is None:
            self.set_capacity()
        now = time.monotonic()
        if now >= self.next_update and now >= self.d.moved_at + COOLDOWN_S:
            self.next_update = now + PCMK_EVERY_S
            self.update_utilization(v)
            if not self.managed and time.time() >= epoch:
                self.manage()


def cmd_leader(c, t):
    print(view(c).get(t, {}).get("leader") or "")
    return 0


def cmd_hosted(c, node):
    v = view(c)
    roles = [f"{t} {'primary' if tv['leader'] == node else 'replica'}"
             for t, tv in v.items() if node in tv["members"]]
    print(f"{node} hosted: {', '.join(roles) or 'nothing'}")
    return 0


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    c = Cluster(sys.argv[2])
    cmd = sys.argv[1]
    if cmd == "daemon":
        # SIGTERM unwinds (a move's `finally` removes DIR/placement.moving).
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        Daemon(c, sys.argv[3]).loop()
    if cmd == "hosted":
        sys.exit(cmd_hosted(c, sys.argv[3]))
    if cmd == "leader":
        sys.exit(cmd_leader(c, sys.argv[3]))
    sys.exit({"leaders": cmd_leaders, "redundant": cmd_redundant, "status": cmd_status}[cmd](c))


if __name__ == "__main__":
    main()
