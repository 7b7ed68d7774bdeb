"""kubespray's fact cache, kept per cluster between runs.

run-kubespray's pod starts with an empty fact cache, and kubespray refuses --limit unless every
node the limit leaves out has facts in it. The controller keeps the facts each run gathered in
the cluster's ConfigMap (mounted read-only at CACHE_DIR, one gzip'd entry per node), and this
script moves them between that ConfigMap and Ansible's jsonfile cache:

  restore LIMIT  writes the cached facts of each node still fresh into the fact cache and
                 prints, comma-separated, the nodes outside LIMIT whose facts must be gathered
                 again (the reason for each goes to stderr). A node outside LIMIT that does
                 not answer keeps its last facts, however old, if they still hold for its
                 address and host key; without such facts the run cannot go on: restore says
                 which node, and exits with REFUSED. With WAIT set, the nodes of LIMIT that
                 do not answer are waited for, up to WAIT seconds, then refused alike;
  save           writes, for the controller to keep, the facts this run gathered (OUTPUT).

A node's cached facts are fresh when they are at most MAX_AGE seconds old, were gathered at the
address the inventory gives the node now, and hold the host key pinned for that address now (a
reprovisioned host has new keys). What is kept leaves out what may carry a secret: the remote
environment, the kernel's command line and local facts.
"""

import base64
import datetime
import gzip
import json
import os
import socket
import sys
import time

CACHE_DIR = os.environ.get("BPA_FACTS_CACHE", "/etc/bpa/kubespray-facts")
FACT_DIR = os.environ.get("ANSIBLE_CACHE_PLUGIN_CONNECTION", "/tmp/kubespray-facts")
INVENTORY = os.environ.get("BPA_FACTS_INVENTORY", "/inputs/hosts.ini")
KNOWN_HOSTS = os.environ.get("BPA_FACTS_KNOWN_HOSTS", "/etc/bpa/known-hosts/known_hosts")
OUTPUT = os.environ.get("BPA_FACTS_OUTPUT", "/tmp/outputs/kubespray-facts.json")
MAX_AGE = int(os.environ.get("BPA_FACTS_MAX_AGE", "86400"))
# How long a node's sshd has to accept a connection before the node counts as silent.
PROBE_TIMEOUT = float(os.environ.get("BPA_FACTS_PROBE_TIMEOUT", "10"))
# How long restore waits for the nodes of its limit to answer (an upgrade wave's), and how
# often it tries them meanwhile; 0 does not try them.
WAIT = float(os.environ.get("BPA_FACTS_WAIT", "0"))
POLL = float(os.environ.get("BPA_FACTS_POLL", "15"))
# restore's exit status when a silent node's facts are needed and none hold; why goes to the
# pod's termination message too, which Argo shows as the step's (and the controller in the
# CR's status). Outside a pod the file is not there, and nothing is written.
REFUSED = 3
TERMINATION_LOG = os.environ.get("BPA_FACTS_TERMINATION_LOG", "/dev/termination-log")
# Written after the restored facts: a fact file newer than it was gathered by this run.
MARKER = os.path.join(FACT_DIR, ".restored")

NOT_KEPT = {"ansible_env", "ansible_cmdline", "ansible_proc_cmdline", "ansible_local"}


def inventory(limit):
    """The inventory's nodes and their addresses, and the nodes LIMIT selects."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    inv = InventoryManager(loader=DataLoader(), sources=[INVENTORY])
    hosts = {h.name: str(h.vars.get("ansible_host", h.name)) for h in inv.get_hosts("all")}
    ports = {h.name: int(h.vars.get("ansible_port", 22)) for h in inv.get_hosts("all")}
    limited = {h.name for h in inv.get_hosts(limit)} if limit else set()
    return hosts, ports, limited


def silent(address, port):
    """Why the node's sshd does not accept a connection, or None when it does."""
    try:
        with socket.create_connection((address, port), timeout=PROBE_TIMEOUT):
            return None
    except OSError as e:
        return str(e) or type(e).__name__


def pinned_keys(path):
    """The pinned host keys (base64) by address and port, from an OpenSSH known_hosts file."""
    keys = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 3 or fields[0].startswith(("#", "@", "|")):
                continue
            for name in fields[0].split(","):
                port = 22
                if name.startswith("[") and "]:" in name:
                    name, port = name[1:name.index("]:")], int(name[name.index("]:") + 2:])
                keys.setdefault((name, port), set()).add(fields[2])
    return keys


def stale(entry, address, pinned, now, max_age=MAX_AGE):
    """Why a cached entry cannot stand for the node now, or None. pinned are the node's pinned
    host keys."""
    if entry is None:
        return "no facts kept"
    try:
        gathered = datetime.datetime.fromisoformat(entry["gatheredAt"].replace("Z", "+00:00"))
    except (KeyError, TypeError, ValueError):
        return "facts kept without the time they were gathered"
    age = (now - gathered).total_seconds()
    if age > max_age:
        return "facts %dh old, older than %dh" % (age // 3600, max_age // 3600)
    if entry.get("address") != address:
        return "facts gathered at %s, the node is at %s now" % (entry.get("address"), address)
    facts = entry.get("facts") or {}
    keys = {v.split()[-1] for k, v in facts.items() if k.startswith("ansible_ssh_host_key_") and isinstance(v, str) and v}
    if not keys & pinned:
        return "its host key changed since its facts were gathered (reprovisioned)"
    return None


def read_entry(node):
    try:
        with gzip.open(os.path.join(CACHE_DIR, node), "rt", encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, EOFError):
        return {}


def span(seconds):
    """A duration as an operator reads it: 30m, 90s."""
    return "%dm" % (seconds // 60) if seconds >= 60 and seconds % 60 == 0 else "%ds" % seconds


def wait_for(nodes, hosts, ports):
    """The nodes that still do not answer after WAIT seconds, with why."""
    deadline = time.monotonic() + WAIT
    quiet = {n: silent(hosts[n], ports[n]) for n in nodes}
    quiet = {n: why for n, why in quiet.items() if why}
    for n in sorted(quiet):
        print("run-kubespray: %s (%s) does not answer (%s): the run waits for it, up to %s" % (n, hosts[n], quiet[n], span(WAIT)), file=sys.stderr)
    while quiet and time.monotonic() < deadline:
        time.sleep(min(POLL, max(0.0, deadline - time.monotonic())))
        quiet = {n: why for n in quiet if (why := silent(hosts[n], ports[n]))}
    return quiet


def restore(limit, now):
    hosts, ports, limited = inventory(limit)
    pinned = pinned_keys(KNOWN_HOSTS)
    os.makedirs(FACT_DIR, exist_ok=True)
    gather, refused = [], []
    if WAIT > 0:
        for node, why in sorted(wait_for(limited, hosts, ports).items()):
            refused.append("%s (%s) did not answer for %s (%s): the run needs it; bring it back, then argo retry, "
                           "or take it out of the spec" % (node, hosts[node], span(WAIT), why))
            print("run-kubespray: " + refused[-1], file=sys.stderr)
    for node in sorted(hosts):
        entry = read_entry(node)
        keys = pinned.get((hosts[node], ports[node]), set())
        why = stale(entry, hosts[node], keys, now)
        if why is not None and node not in limited:
            quiet = silent(hosts[node], ports[node])
            if quiet is None:
                print("run-kubespray: %s: %s: gathering them again" % (node, why), file=sys.stderr)
                gather.append(node)
                continue
            if stale(entry, hosts[node], keys, now, max_age=float("inf")) is not None:
                refused.append("%s (%s) does not answer (%s) and no facts of it are kept that hold (%s): "
                               "the run needs them; bring the node back, or take it out of the spec" % (node, hosts[node], quiet, why))
                print("run-kubespray: " + refused[-1], file=sys.stderr)
                continue
            print("run-kubespray: %s (%s) does not answer (%s): its kept facts stand for it (%s)" % (node, hosts[node], quiet, why), file=sys.stderr)
            why = None
        if why is None:
            with open(os.path.join(FACT_DIR, node), "w", encoding="utf-8") as f:
                json.dump(entry["facts"], f)
    with open(MARKER, "w", encoding="utf-8"):
        pass
    if refused:
        if os.path.exists(TERMINATION_LOG):
            with open(TERMINATION_LOG, "w", encoding="utf-8") as f:
                f.write("; ".join(refused))
        return REFUSED
    print(",".join(gather))
    return 0


def save():
    hosts, _, _ = inventory("")
    since = os.stat(MARKER).st_mtime_ns if os.path.exists(MARKER) else 0
    kept = {}
    for node in sorted(hosts):
        path = os.path.join(FACT_DIR, node)
        if not os.path.exists(path) or os.stat(path).st_mtime_ns <= since:
            continue
        with open(path, encoding="utf-8") as f:
            facts = {k: v for k, v in json.load(f).items() if k not in NOT_KEPT}
        mtime = datetime.datetime.fromtimestamp(os.stat(path).st_mtime, datetime.timezone.utc)
        entry = {"gatheredAt": mtime.strftime("%Y-%m-%dT%H:%M:%SZ"), "address": hosts[node], "facts": facts}
        data = gzip.compress(json.dumps(entry, sort_keys=True).encode(), mtime=0)
        kept[node] = {"gatheredAt": entry["gatheredAt"], "data": base64.b64encode(data).decode()}
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    with open(OUTPUT, "w", encoding="utf-8") as f:
        json.dump(kept, f, sort_keys=True)
    print("run-kubespray: the facts of %d nodes kept for the next run: %s" % (len(kept), ", ".join(kept) or "none"))


def main(argv):
    if len(argv) == 3 and argv[1] == "restore":
        return restore(argv[2], datetime.datetime.now(datetime.timezone.utc))
    elif len(argv) == 2 and argv[1] == "save":
        save()
    else:
        print("usage: %s restore LIMIT | save" % argv[0], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
