#!/usr/bin/env python3
"""k8scheck.py: check contrib/k8s/*.yaml (python3-yaml).

usage: k8scheck.py DIR [--selftest]

Prints one "FILE: problem" line per problem and exits 1 when there is
any, 0 when there is none (2 usage, 3 no yaml module).  --selftest breaks
copies of the manifests in memory, one way at a time, and checks that
each break is reported; it exits 1 when one is not.

Checked: every document parses and has apiVersion, kind, metadata.name;
the ConfigMap egressd-config has egressd.ini (written to the file
$EGRESSD_INI_OUT when set, for `egressd -t`; the egressd containers' args
are appended to $EGRESSD_ARGS_OUT, "FILE/NAME<TAB>ARG<TAB>ARG..."); every workload's containers use
a pinned image (a tag with a version, never :latest; the egressd image
the same everywhere), drop ALL capabilities, no privilege escalation, a
read-only root, and the pod runs as non-root (the DaemonSet's "prepare"
init container alone is root, with CHOWN and FOWNER only); every
volumeMount names a volume of the pod, every configMap volume a ConfigMap
of DIR; egressd containers read /etc/egressd/egressd.ini from the
ConfigMap and have readiness and liveness probes asking /healthz on their
own -a admin socket (a native sidecar also a startupProbe); a reloader
sends `egressctl ... reload` to that admin socket and mounts the config.
Sidecar: egressd is a native sidecar, its -u socket lies in an emptyDir
the app mounts, the app's HTTPS_PROXY is egressd's -l address, and the app
does not mount the admin socket's volume.  DaemonSet: the sockets are in
the hostPath /run/egressd.  Pod session: an init container makes the
session on the node's admin socket (hostPath, type Socket), the relay's
--socket is that session's socket (pod-$(POD_UID), POD_UID from
metadata.uid) and its --port the app's HTTPS_PROXY port, and a
NetworkPolicy leaves those pods no egress.
"""
import copy
import glob
import os
import re
import sys

try:
    import yaml
except ImportError:
    sys.stderr.write("k8scheck.py: no yaml module (apt-get install "
                     "python3-yaml)\n")
    sys.exit(3)

IMAGE_RE = re.compile(r"^[a-z0-9.-]+(/[a-z0-9._-]+)+:[A-Za-z0-9._-]*[0-9]"
                      r"[A-Za-z0-9._-]*$")


def load(d):
    docs = {}
    for p in sorted(glob.glob(os.path.join(d, "*.yaml"))):
        with open(p, encoding="utf-8") as f:
            docs[os.path.basename(p)] = [x for x in yaml.safe_load_all(f)
                                         if x is not None]
    return docs


def arg_after(args, flag):
    for i, a in enumerate(args or []):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
    return None


def probe_cmd(p):
    return " ".join(str(x) for x in ((p or {}).get("exec") or {})
                    .get("command") or [])


def pod_spec(doc):
    return (((doc.get("spec") or {}).get("template") or {})
            .get("spec") or {})


def mounts_of(c):
    return {m.get("name"): m for m in c.get("volumeMounts") or []}


def check(docs):
    errs = []

    def err(f, msg):
        errs.append("%s: %s" % (f, msg))

    configmaps = {}
    workloads = []
    policies = []
    for f, ds in docs.items():
        if not ds:
            err(f, "no document")
        for d in ds:
            if not isinstance(d, dict):
                err(f, "a document that is not a mapping")
                continue
            for k in ("apiVersion", "kind"):
                if not d.get(k):
                    err(f, "a document without %s" % k)
            name = (d.get("metadata") or {}).get("name")
            if not name:
                err(f, "a %s without metadata.name" % d.get("kind"))
            if d.get("kind") == "ConfigMap":
                configmaps[name] = (f, d)
            elif d.get("kind") in ("Deployment", "DaemonSet",
                                   "StatefulSet"):
                workloads.append((f, d))
            elif d.get("kind") == "NetworkPolicy":
                policies.append((f, d))

    if "egressd-config" not in configmaps:
        err("configmap.yaml", "no ConfigMap egressd-config")
    else:
        f, cm = configmaps["egressd-config"]
        ini = (cm.get("data") or {}).get("egressd.ini")
        if not ini:
            err(f, "egressd-config has no egressd.ini")
        elif os.environ.get("EGRESSD_INI_OUT"):
            with open(os.environ["EGRESSD_INI_OUT"], "w") as o:
                o.write(ini)

    kinds = {}
    images = set()
    for f, w in workloads:
        kinds.setdefault(w["kind"], []).append((f, w))
        spec = pod_spec(w)
        wname = w["metadata"].get("name")
        sel = ((w.get("spec") or {}).get("selector") or {}).get(
            "matchLabels") or {}
        labels = (((w.get("spec") or {}).get("template") or {})
                  .get("metadata") or {}).get("labels") or {}
        if not sel or any(labels.get(k) != v for k, v in sel.items()):
            err(f, "%s: selector.matchLabels do not match the template's "
                "labels" % wname)
        psc = spec.get("securityContext") or {}
        if psc.get("runAsNonRoot") is not True:
            err(f, "%s: the pod is not runAsNonRoot" % wname)
        vols = {v.get("name"): v for v in spec.get("volumes") or []}
        for v in vols.values():
            cmn = (v.get("configMap") or {}).get("name")
            if cmn and cmn not in configmaps:
                err(f, "%s: volume %s: no ConfigMap %s in the folder"
                    % (wname, v.get("name"), cmn))
        inits = spec.get("initContainers") or []
        conts = spec.get("containers") or []
        if not conts:
            err(f, "%s: no containers" % wname)
        allc = [(c, True) for c in inits] + [(c, False) for c in conts]
        for c, is_init in allc:
            cn = c.get("name")
            img = c.get("image") or ""
            if not IMAGE_RE.match(img):
                err(f, "%s/%s: image %r is not pinned to a version tag"
                    % (wname, cn, img))
            if img.endswith(":latest"):
                err(f, "%s/%s: image :latest" % (wname, cn))
            if "/egressd:" in img:
                images.add(img)
            sc = c.get("securityContext") or {}
            if sc.get("readOnlyRootFilesystem") is not True:
                err(f, "%s/%s: root file system not read-only"
                    % (wname, cn))
            if sc.get("allowPrivilegeEscalation") is not False:
                err(f, "%s/%s: allowPrivilegeEscalation is not false"
                    % (wname, cn))
            caps = sc.get("capabilities") or {}
            if caps.get("drop") != ["ALL"]:
                err(f, "%s/%s: capabilities do not drop ALL" % (wname, cn))
            root = sc.get("runAsUser") == 0 or sc.get("runAsNonRoot") is \
                False
            if root or caps.get("add"):
                if not (w["kind"] == "DaemonSet" and is_init and
                        cn == "prepare" and
                        sorted(caps.get("add") or []) ==
                        ["CHOWN", "FOWNER"]):
                    err(f, "%s/%s: runs as root or adds capabilities"
                        % (wname, cn))
            for mn in mounts_of(c):
                if mn not in vols:
                    err(f, "%s/%s: volumeMount %s: no such volume"
                        % (wname, cn, mn))

        # egressd containers: config, probes on their own admin socket
        eg = [(c, i) for c, i in allc if c.get("name") == "egressd"]
        admin = None
        if eg and os.environ.get("EGRESSD_ARGS_OUT"):
            with open(os.environ["EGRESSD_ARGS_OUT"], "a") as o:
                o.write("%s/%s\t%s\n" % (f, wname, "\t".join(
                    str(x) for x in eg[0][0].get("args") or [])))
        for c, is_init in eg:
            args = c.get("args") or []
            admin = arg_after(args, "-a")
            if arg_after(args, "-c") != "/etc/egressd/egressd.ini":
                err(f, "%s/egressd: not -c /etc/egressd/egressd.ini"
                    % wname)
            m = [mm for mm in mounts_of(c).values()
                 if mm.get("mountPath") == "/etc/egressd"]
            if not m or "configMap" not in vols.get(m[0].get("name"), {}):
                err(f, "%s/egressd: /etc/egressd is not the ConfigMap"
                    % wname)
            need = ["readinessProbe", "livenessProbe"]
            if is_init:
                need.append("startupProbe")
                if c.get("restartPolicy") != "Always":
                    err(f, "%s/egressd: an init container that is not a "
                        "native sidecar (restartPolicy: Always)" % wname)
            for pk in need:
                cmd = probe_cmd(c.get(pk))
                if not cmd:
                    err(f, "%s/egressd: no %s" % (wname, pk))
                elif "/healthz" not in cmd or not admin or admin not in cmd:
                    err(f, "%s/egressd: %s does not ask /healthz on the "
                        "admin socket %s" % (wname, pk, admin))
        if eg:
            rel = [c for c, _ in allc if c.get("name") == "reloader"]
            if not rel:
                err(f, "%s: no reloader container" % wname)
            for c in rel:
                text = " ".join(str(x) for x in (c.get("command") or []) +
                                (c.get("args") or []))
                if not admin or not re.search(
                        r"egressctl -s %s reload" % re.escape(admin), text):
                    err(f, "%s/reloader: no `egressctl -s %s reload`"
                        % (wname, admin))
                if "/etc/egressd/egressd.ini" not in text or not any(
                        mm.get("mountPath") == "/etc/egressd"
                        for mm in mounts_of(c).values()):
                    err(f, "%s/reloader: does not watch the mounted "
                        "config" % wname)
                eg_mounts = mounts_of(eg[0][0])
                adir = os.path.dirname(admin or "")
                if not any(mm.get("mountPath") == adir and mn in eg_mounts
                           for mn, mm in mounts_of(c).items()):
                    err(f, "%s/reloader: does not mount egressd's admin "
                        "folder %s" % (wname, adir))

        if w["kind"] == "DaemonSet" and eg:
            c = eg[0][0]
            hp = [mm for mn, mm in mounts_of(c).items()
                  if ((vols.get(mn) or {}).get("hostPath") or {}).get("path") ==
                  "/run/egressd" and mm.get("mountPath") == "/run/egressd"]
            if not hp:
                err(f, "%s/egressd: /run/egressd is not the node's "
                    "hostPath /run/egressd" % wname)
            if not (admin or "").startswith("/run/egressd/"):
                err(f, "%s/egressd: the admin socket is not in "
                    "/run/egressd" % wname)

        if w["kind"] == "Deployment" and eg:          # sidecar
            c = eg[0][0]
            args = c.get("args") or []
            listen, unix = arg_after(args, "-l"), arg_after(args, "-u")
            apps = [x for x in conts if x.get("name") != "reloader"]
            if not listen or not unix:
                err(f, "%s/egressd: needs -l (in-pod TCP) and -u (socket "
                    "in the shared emptyDir)" % wname)
            for app in apps:
                env = {e.get("name"): e.get("value")
                       for e in app.get("env") or []}
                if env.get("HTTPS_PROXY") != "http://%s" % listen:
                    err(f, "%s/%s: HTTPS_PROXY is not http://%s"
                        % (wname, app.get("name"), listen))
                shared = [mn for mn, mm in mounts_of(app).items()
                          if "emptyDir" in vols.get(mn, {}) and
                          mounts_of(c).get(mn, {}).get("mountPath") ==
                          os.path.dirname(unix or "")]
                if not shared:
                    err(f, "%s/%s: does not mount the emptyDir of "
                        "egressd's socket %s" % (wname, app.get("name"),
                                                 unix))
                for mn, mm in mounts_of(c).items():
                    if mm.get("mountPath") == os.path.dirname(admin or "") \
                            and mn in mounts_of(app):
                        err(f, "%s/%s: mounts the admin socket's volume"
                            % (wname, app.get("name")))

        relay = [c for c, _ in allc if c.get("name") == "relay"]
        if relay:                                      # pod session
            r = relay[0]
            args = r.get("args") or []
            envs = {e.get("name"): e for e in r.get("env") or []}
            uid = ((envs.get("POD_UID") or {}).get("valueFrom") or {}).get(
                "fieldRef", {}).get("fieldPath")
            if uid != "metadata.uid":
                err(f, "%s/relay: POD_UID is not metadata.uid" % wname)
            if not args or args[0] != "relay" or \
                    arg_after(args, "--socket") != \
                    "/run/egressd/sessions/pod-$(POD_UID).sock":
                err(f, "%s/relay: not `relay --socket /run/egressd/"
                    "sessions/pod-$(POD_UID).sock`" % wname)
            if r.get("restartPolicy") != "Always" or not r.get(
                    "startupProbe"):
                err(f, "%s/relay: not a native sidecar with a "
                    "startupProbe" % wname)
            sm = [mm for mn, mm in mounts_of(r).items()
                  if ((vols.get(mn) or {}).get("hostPath") or {}).get("path") ==
                  "/run/egressd/sessions"]
            if not sm or sm[0].get("mountPath") != "/run/egressd/sessions":
                err(f, "%s/relay: the node's sessions folder is not "
                    "mounted" % wname)
            port = arg_after(args, "--port")
            for app in conts:
                env = {e.get("name"): e.get("value")
                       for e in app.get("env") or []}
                if env.get("HTTPS_PROXY") != "http://127.0.0.1:%s" % port:
                    err(f, "%s/%s: HTTPS_PROXY is not the relay's port %s"
                        % (wname, app.get("name"), port))
                if mounts_of(app):
                    err(f, "%s/%s: the app mounts node sockets"
                        % (wname, app.get("name")))
            sess = [c for c in inits if c.get("name") == "session"]
            text = " ".join(str(x) for x in (sess[0].get("command") or [])
                            ) if sess else ""
            if not re.search(r"egressctl -s /run/egressd/admin\.sock "
                             r"session new \"?pod-\$POD_UID", text):
                err(f, "%s/session: no `egressctl -s /run/egressd/"
                    "admin.sock session new pod-$POD_UID`" % wname)
            if sess:
                am = [mm for mn, mm in mounts_of(sess[0]).items()
                      if ((vols.get(mn) or {}).get("hostPath") or {}) ==
                      {"path": "/run/egressd/admin.sock", "type": "Socket"}]
                if not am or am[0].get("mountPath") != \
                        "/run/egressd/admin.sock":
                    err(f, "%s/session: the node's admin socket is not "
                        "mounted (hostPath, type Socket)" % wname)
            covered = False
            for pf, p in policies:
                ps = p.get("spec") or {}
                ml = (ps.get("podSelector") or {}).get("matchLabels") or {}
                if ml and all(labels.get(k) == v for k, v in ml.items()) \
                        and "Egress" in (ps.get("policyTypes") or []) \
                        and not ps.get("egress"):
                    covered = True
            if not covered:
                err(f, "%s: no NetworkPolicy denying these pods' egress"
                    % wname)

    for k in ("DaemonSet", "Deployment"):
        if k not in kinds:
            err("contrib/k8s", "no %s" % k)
    if len(images) > 1:
        err("contrib/k8s", "different egressd images: %s"
            % ", ".join(sorted(images)))
    if not any(c.get("name") == "relay" for _, w in workloads
               for c in pod_spec(w).get("initContainers") or []):
        err("contrib/k8s", "no workload using a node session (relay)")
    return errs


def find(docs, kind, name=None, relay=None):
    for f, ds in docs.items():
        for d in ds:
            if d.get("kind") != kind:
                continue
            if name and d["metadata"].get("name") != name:
                continue
            if relay is not None:
                has = any(c.get("name") == "relay" for c in
                          pod_spec(d).get("initContainers") or [])
                if has != relay:
                    continue
            return d
    raise KeyError(kind)


def cont(d, name):
    s = pod_spec(d)
    for c in (s.get("initContainers") or []) + (s.get("containers") or []):
        if c.get("name") == name:
            return c
    raise KeyError(name)


def selftest(docs):
    """(description, mutation, expected substring of some error)"""
    side = lambda d: find(d, "Deployment", relay=False)
    node = lambda d: find(d, "Deployment", relay=True)
    ds = lambda d: find(d, "DaemonSet")
    cases = [
        ("a :latest image", lambda d: cont(side(d), "app").update(
            image="registry.example/agent:latest"), "not pinned"),
        ("an untagged image", lambda d: cont(ds(d), "egressd").update(
            image="registry.example/egressd"), "not pinned"),
        ("two egressd images", lambda d: cont(ds(d), "reloader").update(
            image="registry.example/egressd:0.9.0"), "different egressd"),
        ("no readinessProbe", lambda d: cont(ds(d), "egressd").pop(
            "readinessProbe"), "no readinessProbe"),
        ("a probe not on /healthz", lambda d: cont(side(d), "egressd")[
            "livenessProbe"]["exec"].update(command=["true"]),
            "livenessProbe does not ask /healthz"),
        ("no startupProbe on the native sidecar", lambda d: cont(
            side(d), "egressd").pop("startupProbe"), "no startupProbe"),
        ("a writable root", lambda d: cont(node(d), "app")[
            "securityContext"].update(readOnlyRootFilesystem=False),
            "not read-only"),
        ("capabilities kept", lambda d: cont(ds(d), "egressd")[
            "securityContext"].pop("capabilities"), "drop ALL"),
        ("a root container", lambda d: cont(side(d), "app")[
            "securityContext"].update(runAsUser=0), "runs as root"),
        ("a pod not runAsNonRoot", lambda d: pod_spec(ds(d))[
            "securityContext"].pop("runAsNonRoot"), "not runAsNonRoot"),
        ("a mount of a missing volume", lambda d: pod_spec(side(d))[
            "volumes"].pop(), "no such volume"),
        ("a ConfigMap that is not there", lambda d: find(
            d, "ConfigMap").update(metadata={"name": "other"}),
            "no ConfigMap"),
        ("the app mounts the admin socket", lambda d: cont(
            side(d), "app")["volumeMounts"].append(
            {"name": "egressd-admin", "mountPath": "/run/egressd-admin"}),
            "mounts the admin socket"),
        ("HTTPS_PROXY elsewhere", lambda d: cont(side(d), "app")[
            "env"][0].update(value="http://127.0.0.1:8080"),
            "HTTPS_PROXY is not"),
        ("no reloader", lambda d: pod_spec(ds(d))["containers"].pop(),
            "no reloader"),
        ("a reloader on another socket", lambda d: cont(ds(d), "reloader")
            .update(command=["/bin/sh", "-c",
                             "egressctl -s /tmp/x.sock reload "
                             "/etc/egressd/egressd.ini"]),
            "no `egressctl -s /run/egressd/admin.sock reload`"),
        ("the DaemonSet without its hostPath", lambda d: pod_spec(ds(d))[
            "volumes"][1].update(hostPath=None, emptyDir={}),
            "hostPath /run/egressd"),
        ("the relay on another socket", lambda d: cont(node(d), "relay")[
            "args"].__setitem__(2, "/run/egressd/proxy.sock"),
            "relay: not `relay --socket"),
        ("no session made", lambda d: cont(node(d), "session").update(
            command=["true"]), "session new"),
        ("session pods with egress", lambda d: find(
            d, "NetworkPolicy")["spec"].update(egress=[{}]),
            "no NetworkPolicy"),
        ("a selector that misses", lambda d: ds(d)["spec"]["selector"][
            "matchLabels"].update({"app.kubernetes.io/name": "x"}),
            "selector"),
    ]
    bad = 0
    if check(docs):
        print("not ok 0 - the manifests themselves are clean")
        return 1
    for i, (desc, mut, want) in enumerate(cases, 1):
        d = copy.deepcopy(docs)
        try:
            mut(d)
        except (KeyError, IndexError, TypeError) as e:
            print("not ok %d - %s (the break failed: %r)" % (i, desc, e))
            bad += 1
            continue
        errs = check(d)
        if any(want in e for e in errs):
            print("ok %d - %s: reported" % (i, desc))
        else:
            print("not ok %d - %s: %r not reported (%s)"
                  % (i, desc, want, "; ".join(errs) or "no errors"))
            bad += 1
    print("1..%d" % len(cases))
    return 1 if bad else 0


def main():
    a = sys.argv[1:]
    if not a or len(a) > 2 or (len(a) == 2 and a[1] != "--selftest"):
        sys.stderr.write("usage: k8scheck.py DIR [--selftest]\n")
        return 2
    docs = load(a[0])
    if len(a) == 2:
        return selftest(docs)
    errs = check(docs)
    for e in errs:
        print(e)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
