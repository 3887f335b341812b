#!/usr/bin/env python3
"""mkrecord.py: write a replay record directory by hand, for the record
seal/check tests (tests/integ/record-seal.test) and the golden vector
(tests/data/record/run/).  The layout is SPEC "### replay" as replay
writes it (receipts also with env_sha256, secrets, and command/env when
public): plan.ini, config.ini, run.json,
steps/NN-NAME/{receipt.json,launch.claim,manifest.json,capture.json,stdout,
stderr,files/...}, and a chained audit.log (SPEC "### record": START first,
chain= on every line, computed here independently of egressd) whose
step= lines match the receipts' decision counts.

  mkrecord.py DIR [--public] [--fail] [--json] [--leaky] [--key KEY]
              [--audit FILE [--run-id UUID] [--config-ini FILE]]

--fail   step 2 exits 1, step 3 is skipped, the run exits 1
--json   the audit log in JSON lines (audit_format = json)
--leaky  the receipts also hold what a careless supervisor might write
         (command and env in clear although public = no, a secret's value
         and its sha256 in env and env_sha256), to test that seal drops it
--key    end the audit log with a CHECKPOINT signed with KEY (an ECDSA
         P-256 private key, PEM; signed by the openssl command), as a
         replay's log ends at shutdown (record check --pubkey wants it)
--audit  use FILE (a real egressd's chained log) as audit.log; the
         decisions are then counted from its step= lines
Times, ids and pids are fixed: the same arguments give the same bytes.
"""
import hashlib
import json
import os
import base64
import re
import subprocess
import sys

SECRET_NAME = "API_TOKEN"
SECRET_VALUE = "s3cr3t-t0ken-value-1234"
RUN_ID = "6f1c2b1e-8a4d-4c3b-9e2f-0a1b2c3d4e5f"
BOOT = "0e3a9c54-5a4f-4b5e-8d7c-2f1e0d9c8b7a"


def sha(b):
    return hashlib.sha256(b).hexdigest()


def canon(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()


def write(path, data, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    os.chmod(path, mode)


def chain_text(lines):
    """Text lines (without chain=) -> chained lines (SPEC)."""
    h, out = "0" * 64, []
    for ln in lines:
        h = sha(h.encode() + ln.encode())
        out.append("%s chain=%s" % (ln, h))
    return out


def chain_json(objs):
    """Dicts in key order -> chained JSON lines ("chain" last)."""
    h, out = "0" * 64, []
    for o in objs:
        body = json.dumps(o, separators=(",", ":"), ensure_ascii=False)
        assert body.endswith("}")
        pre = body[:-1]
        h = sha(h.encode() + pre.encode())
        out.append('%s,"chain":"%s"}' % (pre, h))
    return out


def checkpoint(key, run_id, lines, head, ts, as_json):
    """The CHECKPOINT line (without chain) after `lines` lines whose last
    chain value is head (SPEC "### record"), signed by openssl."""
    msg = "egressd-checkpoint\n%s\n1\n%d\n%s" % (run_id, lines, head)
    der = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key],
                         input=msg.encode(), stdout=subprocess.PIPE,
                         check=True).stdout
    sig = base64.b64encode(der).decode()
    if as_json:
        return {"ts": ts, "event": "CHECKPOINT", "seq": 1, "lines": lines,
                "head": head, "sig": sig}
    return "%s CHECKPOINT - seq=1 lines=%d head=%s sig=%s" % (
        ts, lines, head, sig)


def main(argv):
    args = argv[1:]
    opts = {"--public": False, "--fail": False, "--json": False,
            "--leaky": False}
    audit_from = run_id_opt = config_from = key = None
    pos = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in opts:
            opts[a] = True
        elif a == "--audit":
            i += 1
            audit_from = args[i]
        elif a == "--run-id":
            i += 1
            run_id_opt = args[i]
        elif a == "--key":
            i += 1
            key = args[i]
        elif a == "--config-ini":
            i += 1
            config_from = args[i]
        else:
            pos.append(a)
        i += 1
    if len(pos) != 1:
        sys.stderr.write(__doc__)
        return 2
    d = pos[0]
    public, fail = opts["--public"], opts["--fail"]
    run_id = run_id_opt or RUN_ID

    plan = ("[replay]\nname = golden\nconfig = egressd.ini\n"
            "secrets = %s\npublic = %s\n\n"
            "[step:build]\nphase = setup\nrun = make -j2\n"
            "capture = report.txt patch\nsecrets = %s\n\n"
            "[step:test]\nphase = agent\nrun = sh -c 'make check'\n\n"
            "[step:deploy]\nphase = judge\nrun = ./deploy --dry-run\n"
            % (SECRET_NAME, "yes" if public else "no", SECRET_NAME))
    if config_from:
        config = open(config_from, "rb").read()
    else:
        config = (b"[proxy]\nlisten = 127.0.0.2:3128\naudit_chain = yes\n\n"
                  b"[phase:setup]\nallow = pypi.test\n\n"
                  b"[phase:agent]\nallow = api.test\n\n"
                  b"[phase:judge]\nallow = api.test\n")
    write(os.path.join(d, "plan.ini"), plan)
    write(os.path.join(d, "config.ini"), config)

    steps = [
        {"name": "build", "phase": "setup", "argv": ["make", "-j2"],
         "exit": 0, "secrets": [SECRET_NAME],
         "t0": "2026-12-01T17:00:00.200Z", "t1": "2026-12-01T17:00:04.250Z",
         "reqs": [("ALLOW", "pypi.test:443"), ("ALLOW", "pypi.test:443"),
                  ("BLOCK", "evil.test:443"), ("FAIL", "pypi.test:8443")],
         "files": {"stdout": b"building\nok\n",
                   "stderr": b"warning: \xc3\xa9t\xc3\xa9 [REDACTED]\n",
                   "files/report.txt": b"<report ok='1'/>\n",
                   "patch": b"diff --git a/x b/x\n"}},
        {"name": "test", "phase": "agent",
         "argv": ["sh", "-c", "make check"], "exit": 1 if fail else 0,
         "secrets": [],
         "t0": "2026-12-01T17:00:04.300Z", "t1": "2026-12-01T17:00:09.400Z",
         "reqs": [("ALLOW", "api.test:443"), ("BLOCK", "pypi.test:443"),
                  ("BLOCK", "github.test:443")],
         "files": {"stdout": b"PASS: 3\n" if not fail else b"FAIL: 1\n",
                   "stderr": b""}},
        {"name": "deploy", "phase": "judge",
         "argv": ["./deploy", "--dry-run"], "exit": 0, "secrets": [],
         "t0": "2026-12-01T17:00:09.410Z", "t1": "2026-12-01T17:00:09.480Z",
         "reqs": [("ALLOW", "api.test:443")],
         "files": {"stdout": b"dry run\n", "stderr": b""}},
    ]

    # audit.log
    cfg_sha = sha(config)
    counts = [{"allowed": 0, "blocked": 0, "failed": 0} for _ in steps]
    if audit_from:
        raw = open(audit_from, "rb").read()
        write(os.path.join(d, "audit.log"), raw, 0o600)
        names = [s["name"] for s in steps]
        for ln in raw.decode("utf-8", "replace").splitlines():
            if ln.startswith("{"):
                o = json.loads(ln)
                ev, st = o.get("event"), o.get("step")
            else:
                f = ln.split(" ")
                ev = f[1] if len(f) > 1 else None
                m = re.search(r" step=([^ ]+)", ln)
                st = m.group(1) if m else None
            if st in names:
                k = {"ALLOW": "allowed", "BLOCK": "blocked",
                     "FAIL": "failed"}.get(ev)
                if k:
                    counts[names.index(st)][k] += 1
    else:
        text, objs, nid = [], [], 0
        text.append("2026-12-01T17:00:00.000Z START - run=%s config=%s "
                    "prev=-" % (run_id, cfg_sha))
        objs.append({"ts": "2026-12-01T17:00:00.000Z", "event": "START",
                     "run": run_id, "config": cfg_sha, "prev": "-"})
        prevphase = "setup"
        for si, s in enumerate(steps):
            if fail and si == 2:
                break
            if s["phase"] != prevphase:
                text.append("%s PHASE %s from=%s by=api closed=0"
                            % (s["t0"], s["phase"], prevphase))
                objs.append({"ts": s["t0"], "event": "PHASE",
                             "phase": s["phase"], "from": prevphase,
                             "by": "api", "closed": 0})
                prevphase = s["phase"]
            for ev, hp in s["reqs"]:
                nid += 1
                host, port = hp.rsplit(":", 1)
                ts = s["t0"][:-4] + "%03dZ" % (500 + nid)
                base = "%s %s %s id=%d phase=%s step=%s client=127.0.0.1:4%04d " \
                    "method=CONNECT" % (ts, ev, hp, nid, s["phase"], s["name"],
                                        nid)
                o = {"ts": ts, "event": ev, "host": host, "port": int(port),
                     "id": nid, "phase": s["phase"], "step": s["name"],
                     "client": "127.0.0.1:4%04d" % nid, "method": "CONNECT"}
                if ev == "ALLOW":
                    base += " addr=127.0.0.3 rule=%s" % host
                    o.update(addr="127.0.0.3", rule=host)
                elif ev == "BLOCK":
                    base += " reason=not_allowed"
                    o.update(reason="not_allowed")
                else:
                    base += " addr=127.0.0.3 reason=connect_refused"
                    o.update(addr="127.0.0.3", reason="connect_refused")
                text.append(base)
                objs.append(o)
                if ev == "ALLOW":
                    text.append("%s CLOSE %s id=%d phase=%s step=%s up=10 "
                                "down=20 ms=5 end=client_closed"
                                % (ts, hp, nid, s["phase"], s["name"]))
                    objs.append({"ts": ts, "event": "CLOSE", "host": host,
                                 "port": int(port), "id": nid,
                                 "phase": s["phase"], "step": s["name"],
                                 "up": 10, "down": 20, "ms": 5,
                                 "end": "client_closed"})
                counts[si][{"ALLOW": "allowed", "BLOCK": "blocked",
                            "FAIL": "failed"}[ev]] += 1
        out = chain_json(objs) if opts["--json"] else chain_text(text)
        if key:
            last = out[-1]
            head = (last[-66:-2] if opts["--json"] else
                    last.rsplit(" chain=", 1)[1])
            ck = checkpoint(key, run_id, len(out), head,
                            "2026-12-01T17:00:09.500Z", opts["--json"])
            if opts["--json"]:
                objs.append(ck)
            else:
                text.append(ck)
            out = chain_json(objs) if opts["--json"] else chain_text(text)
        write(os.path.join(d, "audit.log"), "\n".join(out) + "\n", 0o600)

    # steps
    for si, s in enumerate(steps):
        idx = si + 1
        sd = os.path.join(d, "steps", "%02d-%s" % (idx, s["name"]))
        os.makedirs(sd, exist_ok=True)
        skipped = fail and si == 2
        env = {"CI": "1", "PATH": "/usr/bin:/bin"}
        rec = {"step": s["name"], "index": idx, "phase": s["phase"],
               "state": "skipped" if skipped else "captured",
               "command_sha256": sha(canon(s["argv"])),
               "pid": None if skipped else 4100 + idx,
               "pid_start": None if skipped else "%s:%d" % (BOOT, 9000 + idx),
               "started": None if skipped else s["t0"],
               "ended": None if skipped else s["t1"],
               "exit_code": None if skipped else s["exit"],
               "signal": None,
               "termination": "skipped" if skipped else "exited",
               "decisions": counts[si],
               "env_sha256": {k: sha(v.encode()) for k, v in env.items()},
               "secrets": s["secrets"]}
        if public:
            rec["command"] = s["argv"]
            rec["env"] = env
        if opts["--leaky"]:
            rec["command"] = s["argv"]
            rec["env"] = dict(env)
            for n in s["secrets"]:
                rec["env"][n] = SECRET_VALUE
                rec["env_sha256"][n] = sha(SECRET_VALUE.encode())
            rec["secret_values"] = {n: SECRET_VALUE for n in s["secrets"]}
        write(os.path.join(sd, "receipt.json"), canon(rec))
        if skipped:
            continue
        write(os.path.join(sd, "launch.claim"), b"")
        man = []
        for p in sorted(s["files"]):
            b = s["files"][p]
            write(os.path.join(sd, p), b)
            man.append({"path": p, "size": len(b), "sha256": sha(b)})
        write(os.path.join(sd, "manifest.json"), canon(man))
        write(os.path.join(sd, "capture.json"),
              canon({"gaps": [], "redacted": ["stderr"] if si == 0 else []}))

    run = {"egressd_run": 1, "name": "golden", "id": run_id,
           "started": "2026-12-01T17:00:00.000Z",
           "ended": "2026-12-01T17:00:09.500Z", "state": "finished",
           "exit": 1 if fail else 0, "deadline": 3600, "cancel_reason": None,
           "public": public,
           "supervisor": {"pid": 4100, "pid_start": "%s:9000" % BOOT},
           "steps": len(steps)}
    write(os.path.join(d, "run.json"), canon(run))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
